import type { ModelCatalog, ModelDescription } from '../backend-client/catalog.ts'
import { HISTORY_CAP, type HistoryEntry, type HistoryReader } from '../stores/history/history-store.ts'
import type { RolloutStore } from '../stores/rollouts/rollout-store.ts'
import { RATE_LIMIT } from '../openapi/components.ts'
import { rolloutHistory, rolloutPut, rolloutState, rolloutStored } from '../openapi/schemas.ts'
import { Problem, type FieldError } from '../problem.ts'
import { withLayout } from '../rollout/bucket-layout.ts'
import { defaultRollout, rolloutSchema, type Canary, type Rollout } from '../rollout/rollout.ts'
import { formatPath, isRecord } from '../format.ts'
import type { AuthVariables } from '../pipeline/auth/index.ts'
import { jsonBody } from '../pipeline/body/json-body.ts'
import type { BodyVariables } from '../pipeline/body/index.ts'
import { bytesToHex } from '../stores/keys/api-key.ts'
import { randomUuid } from '../random-ids.ts'
import type { Reroutes } from '../pipeline/route/reroutes.ts'
import type { Responder } from '../pipeline/stage.ts'
import { answer, route } from './route.ts'
import { shadowWindowErrors } from '../rollout/shadow-promotion.ts'
import { pausedRollout, resumedRollout } from '../rollout/transition.ts'

const etag = (revision: number) => `"r${revision}"`

/**
 * The stored revision If-Match lets a PUT replace, or undefined when it names none of it (412).
 * As RFC 9110 has it: a list of strong ETags, any of which may match, or `*` for whatever
 * revision is stored (none when the model has no stored rollout yet). A value that is neither is 400.
 */
const matchedRevision = (ifMatch: string, stored: number | undefined): number | undefined => {
  if (ifMatch.trim() === '*') return stored
  const tags = ifMatch.split(',').map((tag) => /^"r(\d+)"$/.exec(tag.trim())?.[1])
  if (tags.some((tag) => tag === undefined)) throw new Problem(400, 'Bad Request', `If-Match must be "*" or ETags from GET, like "r${stored ?? 0}"`)
  const current = stored ?? 0
  return tags.some((tag) => Number(tag) === current) ? current : undefined
}

/** The revisions an If-Match's ETags name (none for `*`). */
const taggedRevisions = (ifMatch: string): number[] =>
  ifMatch.trim() === '*' ? [] : ifMatch.split(',').map((tag) => Number(/^"r(\d+)"$/.exec(tag.trim())?.[1]))

/** The canary fields only the controller writes: a client setting them would steer its verdicts. */
const CONTROLLER_FIELDS = ['step_started_at', 'critical_streak', 'clean_streak', 'last_reason', 'paused_at'] as const

/**
 * Controller fields a PUT sets. Restating the running canary's as GET showed them is not setting
 * them (a read-modify-write sends them back); any other value is refused.
 */
const controllerFieldErrors = (raw: unknown, running: Canary | undefined): FieldError[] => {
  const canary = isRecord(raw) && isRecord(raw.canary) ? raw.canary : {}
  const restated = (name: (typeof CONTROLLER_FIELDS)[number]) => running !== undefined && running.variant === canary.variant && running[name] === canary[name]
  return CONTROLLER_FIELDS.filter((name) => Object.hasOwn(canary, name) && !restated(name))
    .map((name) => ({ path: `canary.${name}`, message: 'is kept by the rollout controller; a PUT may leave it out or restate the stored value, not set it' }))
}

/**
 * The id of a PUT's change: the same key sending the same rollout against the same revision is
 * the same change, so a retry of a PUT whose answer was lost (a 503 after Redis applied it) is
 * recognised by the store rather than refused with 412 or applied twice.
 */
const putChangeId = async (model: string, actor: string, expected: number, raw: unknown): Promise<string> => {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(JSON.stringify([model, actor, expected, raw])))
  return `rollout-put:${bytesToHex(new Uint8Array(digest))}`
}

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

/** A PUT's history entry: the canary arm's weights before and after, when either side runs a canary. */
const manualEntry = (id: string, model: string, actor: string, before: Rollout | undefined, after: Rollout, revision: number): HistoryEntry => {
  const variant = after.canary?.variant ?? before?.canary?.variant ?? null
  const weightOf = (rollout: Rollout | undefined) => rollout?.arms.find((a) => a.variant === variant)?.weight ?? null
  const reason = after.canary && !before?.canary ? `canary "${variant}" started by PUT`
    : before?.canary && !after.canary ? `canary "${variant}" ended by PUT`
    : 'rollout replaced by PUT'
  return { id, model, time: new Date().toISOString(), actor, action: 'manual', variant, from_weight: weightOf(before), to_weight: weightOf(after), reason, revision }
}

const DEFAULT_HISTORY_LIMIT = 100

type Catalog = Pick<ModelCatalog, 'describe'>
type Rollouts = Pick<RolloutStore, 'get' | 'compareAndSet'>

/** `GET /v1/models/{model}/rollout`: the stored rollout, or the default one, with its ETag. */
const getRollout = (): Responder<{ isolate: { catalog: Catalog; rollouts: Rollouts; reroutes: Pick<Reroutes, 'counts'> }; requestId: string }> =>
  async function getRollout(c) {
    const { catalog, rollouts } = c.get('isolate')
    const model = await catalog.describe(c.req.param().model, c.get('requestId'))
    const stored = await rollouts.get(model.name)
    const revision = stored?.revision ?? 0
    c.header('etag', etag(revision))
    return c.json({
      model: model.name,
      revision,
      source: stored ? 'stored' : 'default',
      rollout: stored?.rollout ?? defaultRollout(model),
      // This isolate's requests under this revision sent off arms whose version is not served.
      rerouted: c.get('isolate').reroutes.counts(model.name, revision),
    })
  }

/**
 * `PUT /v1/models/{model}/rollout`: replaces the whole state atomically and needs `If-Match` with
 * the ETag of the revision it replaces (428 without); it fails (412) if someone changed it since.
 * A rollout with a `canary` hands that arm to the controller.
 */
const putRollout = (): Responder<{ isolate: { catalog: Catalog; rollouts: Rollouts }; requestId: string } & AuthVariables & BodyVariables> =>
  async function putRollout(c) {
    const ifMatch = c.req.header('if-match')
    // Without it a PUT would replace whatever revision it happened to read, another admin's
    // or the controller's change of a moment ago included.
    if (ifMatch === undefined) {
      throw new Problem(428, 'Precondition Required', 'a rollout PUT must name the revision it replaces: send If-Match with the ETag from GET', { slug: 'if-match-required' })
    }
    const { catalog, rollouts } = c.get('isolate')
    // What the backend serves now: a version it stopped serving must not be accepted from a cached list.
    const model = await catalog.describe(c.req.param().model, c.get('requestId'), { fresh: true })
    const body: unknown = jsonBody(c.get('bodyText'))
    const raw = isRecord(body) && isRecord(body.rollout) ? body.rollout : body
    const parsed = rolloutSchema.safeParse(raw)
    if (!parsed.success) {
      const errors = parsed.error.issues.map((i) => ({ path: formatPath(i.path) || '(body)', message: i.message }))
      throw new Problem(400, 'Bad Request', 'the rollout is invalid', { slug: 'invalid-rollout', errors })
    }
    const unknown = unknownVersions(parsed.data, model)
    if (unknown.length > 0) throw new Problem(400, 'Bad Request', 'the rollout names versions the backend does not serve', { slug: 'invalid-rollout', errors: unknown })
    const stored = await rollouts.get(model.name, { fresh: true })
    const kept = [...controllerFieldErrors(raw, stored?.rollout.canary), ...shadowWindowErrors(parsed.data, stored?.rollout)]
    if (kept.length > 0) throw new Problem(400, 'Bad Request', 'the rollout sets fields only the rollout controller keeps', { slug: 'invalid-rollout', errors: kept })
    const current = stored?.revision ?? 0
    const expected = matchedRevision(ifMatch, stored?.revision)
    const conflict = () => new Problem(412, 'Precondition Failed', `the rollout is at revision ${current}, not one that If-Match names; read it again and retry`, { slug: 'rollout-conflict' })
    const actor = c.var.caller?.name ?? 'admin'
    // The layout is derived from the revision it replaces, so that one must be the one just read.
    const rollout = withLayout(parsed.data, stored?.rollout)
    // When If-Match names none of the stored revision, this may be the retry of a PUT that was
    // applied after its answer was given up: each named revision's change is looked up by its
    // id (the store applies nothing for an id it has not seen while the revision differs).
    for (const from of expected === undefined ? taggedRevisions(ifMatch) : [expected]) {
      const id = await putChangeId(model.name, actor, from, raw)
      const revision = await rollouts.compareAndSet(model.name, from, rollout, { id, entry: manualEntry(id, model.name, actor, stored?.rollout, rollout, from + 1) })
      if (revision === undefined) continue
      if (from === current) {
        c.header('etag', etag(revision))
        return c.json({ model: model.name, revision, source: 'stored', rollout })
      }
      // A retry of a change already made: answered with what it made, while that is still what is stored.
      if (stored && stored.revision === revision) {
        c.header('etag', etag(revision))
        return c.json({ model: model.name, revision, source: 'stored', rollout: stored.rollout })
      }
      throw new Problem(412, 'Precondition Failed', `this change was applied as revision ${revision}, and the rollout has changed since (now revision ${current}); read it again`, { slug: 'rollout-conflict' })
    }
    throw conflict()
  }

/**
 * `POST /v1/models/{model}/rollout/pause` and `…/resume`: the canary kept at its weight with its
 * streaks, the controller's clock stopped while paused and moved on by the paused time on resume
 * (edge/rollout/transition.ts), so it resumes the same step. Compare-and-set with If-Match like a
 * PUT; the change is recorded in the history as `pause` or `resume`.
 */
const pauseOrResume = (action: 'pause' | 'resume'): Responder<{ isolate: { catalog: Catalog; rollouts: Rollouts }; requestId: string } & AuthVariables> =>
  async function pauseOrResumeCanary(c) {
    const ifMatch = c.req.header('if-match')
    if (ifMatch === undefined) {
      throw new Problem(428, 'Precondition Required', `a canary ${action} must name the revision it changes: send If-Match with the ETag from GET`, { slug: 'if-match-required' })
    }
    const { catalog, rollouts } = c.get('isolate')
    const model = await catalog.describe(c.req.param().model, c.get('requestId'))
    const stored = await rollouts.get(model.name, { fresh: true })
    const current = stored?.revision ?? 0
    if (matchedRevision(ifMatch, stored?.revision) === undefined) {
      throw new Problem(412, 'Precondition Failed', `the rollout is at revision ${current}, not one that If-Match names; read it again and retry`, { slug: 'rollout-conflict' })
    }
    const now = Date.now()
    const next = !stored ? 'the rollout runs no canary' : action === 'pause' ? pausedRollout(stored.rollout, now) : resumedRollout(stored.rollout, now)
    if (typeof next === 'string') throw new Problem(400, 'Bad Request', `cannot ${action}: ${next}`, { slug: 'canary-state' })
    const variant = next.canary!.variant
    const weight = next.arms.find((a) => a.variant === variant)?.weight ?? null
    const actor = c.var.caller?.name ?? 'admin'
    const id = `rollout-${action}:${randomUuid()}`
    const reason = action === 'pause'
      ? `canary "${variant}" paused at ${weight}%: the controller leaves it until resumed`
      : `canary "${variant}" resumed at ${weight}%: its step continues, the paused time not counted`
    const entry: HistoryEntry = { id, model: model.name, time: new Date(now).toISOString(), actor, action, variant, from_weight: weight, to_weight: weight, reason, revision: current + 1 }
    const revision = await rollouts.compareAndSet(model.name, current, next, { id, entry })
    if (revision === undefined) throw new Problem(412, 'Precondition Failed', 'the rollout changed while this was applied; read it again and retry', { slug: 'rollout-conflict' })
    c.header('etag', etag(revision))
    return c.json({ model: model.name, revision, source: 'stored', rollout: next })
  }

/** `GET /v1/models/{model}/rollout/history`: the controller's decisions and the PUTs, newest first (`?limit=`, default 100, at most 500). */
const getRolloutHistory = (): Responder<{ isolate: { history: HistoryReader } } & AuthVariables> =>
  async function getRolloutHistory(c) {
    // Mounted behind the admin scope like the rollout itself; should that guard ever be
    // missing, refuse rather than show the history to anyone.
    if (!c.var.caller?.scopes.includes('admin')) throw new Problem(401, 'Unauthorized', 'an API key with the "admin" scope is required')
    const raw = c.req.query('limit')
    const limit = raw === undefined ? DEFAULT_HISTORY_LIMIT : Number(raw)
    if (!Number.isInteger(limit) || limit < 1 || limit > HISTORY_CAP) throw new Problem(400, 'Bad Request', `limit must be an integer from 1 to ${HISTORY_CAP}`)
    // No catalog lookup: the history of a model the backend no longer serves is still wanted.
    const model = c.req.param().model
    return c.json({ model, entries: await c.get('isolate').history.list(model, limit) })
  }

/** The rollout of a model: its weights, pins, shadow and canary, and its history (admin scope). */
export const rolloutRoutes = () => [
  route({
    method: 'get',
    path: '/v1/models/:model/rollout',
    guard: 'admin',
    operationId: 'getRollout',
    summary: 'The rollout of a model: arms and weights, pins, shadow, canary',
    tag: 'rollout',
    parameters: ['Model'],
    answers: { 200: { description: 'the rollout, stored or the default one', schema: rolloutState, headers: ['ETag', ...RATE_LIMIT] } },
    problems: [404],
    handle: answer(getRollout()),
  }),
  route({
    method: 'put',
    path: '/v1/models/:model/rollout',
    guard: 'admin',
    body: rolloutPut,
    operationId: 'putRollout',
    summary: 'Replace the rollout (compare-and-set with If-Match)',
    description: 'Replaces the whole rollout atomically. A layout left out is derived from the stored one, so a weight change moves only users between the arms whose weights changed. A rollout with a `canary` hands that arm to the controller.',
    tag: 'rollout',
    parameters: ['Model', 'IfMatch'],
    answers: { 200: { description: 'stored', schema: rolloutStored, headers: ['ETag', ...RATE_LIMIT] } },
    problems: [404, 412, 428],
    handle: answer(putRollout()),
  }),
  ...(['pause', 'resume'] as const).map((action) => route({
    method: 'post',
    path: `/v1/models/:model/rollout/${action}`,
    guard: 'admin',
    operationId: action === 'pause' ? 'pauseCanary' : 'resumeCanary',
    summary: action === 'pause' ? 'Pause the canary: weight, streaks and step clock kept' : 'Resume a paused canary from the same step',
    description: action === 'pause'
      ? 'The canary keeps its arm and weight; the controller leaves it (no decisions, its step clock stopped) until it is resumed. Compare-and-set with If-Match; recorded in the history as `pause`.'
      : 'The controller drives the canary again from the step it was paused in; the step\'s start moves on by the time paused, so its dwell counts only time driven. Compare-and-set with If-Match; recorded in the history as `resume`.',
    tag: 'rollout',
    parameters: ['Model', 'IfMatch'],
    answers: { 200: { description: 'stored', schema: rolloutStored, headers: ['ETag', ...RATE_LIMIT] } },
    problems: [400, 404, 412, 428],
    handle: answer(pauseOrResume(action)),
  })),
  route({
    method: 'get',
    path: '/v1/models/:model/rollout/history',
    guard: 'admin',
    operationId: 'getRolloutHistory',
    summary: 'Rollout decisions (controller) and changes (PUT), newest first',
    tag: 'rollout',
    parameters: ['Model', 'HistoryLimit'],
    answers: { 200: { description: 'the history', schema: rolloutHistory, headers: RATE_LIMIT } },
    problems: [400],
    handle: answer(getRolloutHistory()),
  }),
] as const
