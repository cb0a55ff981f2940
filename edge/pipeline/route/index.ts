import { HEADERS } from '../../../shared/headers.ts'
import type { Isolate } from '../../isolate.ts'
import type { ModelDescription } from '../model/catalog.ts'
import type { ModelVariables } from '../model/index.ts'
import { Problem } from '../../problem.ts'
import type { RequestIdVariables } from '../request-id/index.ts'
import type { Stage } from '../stage.ts'
import type { ValidateVariables } from '../validate/index.ts'
import type { Reroutes } from './reroutes.ts'
import { assignArm, inShadow, pinnable, standInFor, type Assignment, type Rollout } from '../../rollout/rollout.ts'
import { defaultRollout } from '../../rollout/store.ts'
import { quoteInput } from '../../../shared/quote-input.ts'

export interface RouteVariables {
  /** Which version and variant serve this request, and why. */
  assignment: Assignment
}

/** The predict input is there on predict (its entity id is the sticky key), not on tensor routes. */
type RouteNeeds = ModelVariables & RequestIdVariables & Partial<ValidateVariables> & { isolate: Pick<Isolate, 'rollouts' | 'reroutes'> }

export interface RouteOptions {
  /** Header carrying the sticky key when the request names no entity. */
  experimentHeader?: string
}

/**
 * A sticky assignment to a version the backend no longer serves (a rollout can outlive its
 * versions) goes to the arm standing in for it instead, counted and logged once per revision.
 */
const servedAssignment = (sticky: Assignment, rollout: Rollout, revision: number, model: ModelDescription, reroutes: Reroutes): Assignment => {
  if (model.versions.includes(sticky.version)) return sticky
  const standIn = standInFor(rollout, sticky.variant, model.versions) ?? defaultRollout(model).arms[0]
  reroutes.record(model.name, revision, sticky, standIn, model.versions)
  return { variant: standIn.variant, version: standIn.version, by: 'sticky' }
}

/**
 * Picks the version that serves a request: a pin header wins, else the sticky arm of (entity
 * id, else X-Experiment-Key, else the request id), so a user stays in one arm while weights hold.
 * The response names the version and variant (`X-Model-Version`, `X-Variant`).
 */
export const route = ({ experimentHeader = 'x-experiment-key' }: RouteOptions = {}): Stage<RouteNeeds, RouteVariables> =>
  async function route(c, next) {
    const { rollouts, reroutes } = c.get('isolate')
    const model = c.get('model')
    const { name } = model
    // An isolate that never read the rollout and cannot reach its store routes by the default
    // (newest version) rather than failing the request.
    const stored = await rollouts.get(name).catch((err: unknown) => {
      console.error(JSON.stringify({ level: 'warn', msg: 'rollout state unavailable; routing by the default', model: name, error: err instanceof Error ? err.message : String(err) }))
      return undefined
    })
    const rollout = stored?.rollout ?? defaultRollout(model)
    // A version in the path (Open Inference Protocol routes) pins just like the header.
    const pin = c.req.param('version') ?? c.req.header(HEADERS.modelVersion)
    if (pin !== undefined) {
      if (!/^[1-9][0-9]{0,8}$/.test(pin.trim())) throw new Problem(400, 'Bad Request', `${HEADERS.modelVersion} must be a version number, got ${quoteInput(pin)}`)
      const version = Number(pin)
      if (!model.versions.includes(version)) throw new Problem(404, 'Not Found', `model "${name}" has no version ${version} (served: ${model.versions.join(', ')})`)
      if (!pinnable(rollout).has(version)) throw new Problem(400, 'Bad Request', `version ${version} of "${name}" may not be pinned (allowed: ${[...pinnable(rollout)].join(', ')})`)
      const arm = rollout.arms.find((a) => a.version === version)
      c.set('assignment', { variant: arm?.variant ?? 'pinned', version, by: 'pin' })
    } else {
      const entity = c.get('predict')?.entity
      const key = (entity && Object.values(entity)[0]) ?? c.req.header(experimentHeader) ?? c.get('requestId')
      const assignment = servedAssignment(assignArm(rollout, name, key), rollout, stored?.revision ?? 0, model, reroutes)
      const shadow = rollout.shadow && rollout.shadow.version !== assignment.version && inShadow(rollout, name, key) ? rollout.shadow.version : undefined
      c.set('assignment', shadow === undefined ? assignment : { ...assignment, shadow })
    }
    await next()
    // Also on a failed forward: which version was tried is what its caller needs to know.
    const { version, variant } = c.get('assignment')
    c.res.headers.set(HEADERS.modelVersion, String(version))
    c.res.headers.set(HEADERS.variant, variant)
  }
