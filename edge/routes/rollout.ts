import { Hono, type Context } from 'hono'
import type { ModelCatalog, ModelDescription } from '../catalog/model-catalog.ts'
import type { AppEnv } from '../env.ts'
import { Problem, type FieldError } from '../problem.ts'
import { rolloutSchema, type Rollout } from '../routing/rollout.ts'
import { defaultRollout, type RolloutStore } from '../routing/rollout-store.ts'
import { formatPath, isRecord } from '../validation/format.ts'

export interface RolloutRoutesOptions {
  services: (c: Context<AppEnv>) => { catalog: ModelCatalog; rollouts: RolloutStore }
}

const etag = (revision: number) => `"r${revision}"`

/** Versions a rollout names that the backend does not serve. */
const unknownVersions = (rollout: Rollout, model: ModelDescription): FieldError[] => {
  const served = new Set(model.versions)
  const errors: FieldError[] = []
  rollout.arms.forEach((arm, i) => {
    if (!served.has(arm.version)) errors.push({ path: `arms[${i}].version`, message: `version ${arm.version} is not served (served: ${model.versions.join(', ')})` })
  })
  rollout.pinnable.forEach((v, i) => {
    if (!served.has(v)) errors.push({ path: `pinnable[${i}]`, message: `version ${v} is not served` })
  })
  if (rollout.shadow && !served.has(rollout.shadow.version)) errors.push({ path: 'shadow.version', message: `version ${rollout.shadow.version} is not served` })
  return errors
}

/**
 * `GET|PUT /v1/models/{model}/rollout` (mounted behind the `admin` scope): the weights, pins and
 * shadow of a model. PUT replaces the whole state atomically; with `If-Match` it fails (412)
 * if someone changed it since that revision was read.
 */
export const rolloutRoutes = ({ services }: RolloutRoutesOptions) =>
  new Hono<AppEnv>()
    .get('/v1/models/:model/rollout', async (c) => {
      const { catalog, rollouts } = services(c)
      const model = await catalog.describe(c.req.param('model'), c.get('requestId'))
      const stored = await rollouts.get(model.name)
      const revision = stored?.revision ?? 0
      c.header('etag', etag(revision))
      return c.json({ model: model.name, revision, source: stored ? 'stored' : 'default', rollout: stored?.rollout ?? defaultRollout(model) })
    })
    .put('/v1/models/:model/rollout', async (c) => {
      const { catalog, rollouts } = services(c)
      const model = await catalog.describe(c.req.param('model'), c.get('requestId'))
      const body: unknown = await c.req.json().catch(() => {
        throw new Problem(400, 'Bad Request', 'the body is not valid JSON', { slug: 'malformed-json' })
      })
      const parsed = rolloutSchema.safeParse(isRecord(body) && isRecord(body.rollout) ? body.rollout : body)
      if (!parsed.success) {
        const errors = parsed.error.issues.map((i) => ({ path: formatPath(i.path) || '(body)', message: i.message }))
        throw new Problem(400, 'Bad Request', 'the rollout is invalid', { slug: 'invalid-rollout', errors })
      }
      const unknown = unknownVersions(parsed.data, model)
      if (unknown.length > 0) throw new Problem(400, 'Bad Request', 'the rollout names versions the backend does not serve', { slug: 'invalid-rollout', errors: unknown })
      const ifMatch = c.req.header('if-match')
      const current = (await rollouts.get(model.name))?.revision ?? 0
      const expected = ifMatch === undefined ? current : Number(/^"r(\d+)"$/.exec(ifMatch.trim())?.[1] ?? Number.NaN)
      if (!Number.isInteger(expected)) throw new Problem(400, 'Bad Request', `If-Match must be an ETag from GET, like "r${current}"`)
      const revision = await rollouts.compareAndSet(model.name, expected, parsed.data)
      if (revision === undefined) {
        throw new Problem(412, 'Precondition Failed', `the rollout changed since revision ${expected}; read it again and retry`, { slug: 'rollout-conflict' })
      }
      c.header('etag', etag(revision))
      return c.json({ model: model.name, revision, source: 'stored', rollout: parsed.data })
    })
