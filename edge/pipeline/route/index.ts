import { HEADERS } from '../../../shared/headers.ts'
import type { ModelDescription } from '../../backend-client/catalog.ts'
import type { ModelVariables } from '../model/index.ts'
import { Problem } from '../../problem.ts'
import type { RequestIdVariables } from '../request-id/index.ts'
import type { Stage } from '../stage.ts'
import type { ValidateVariables } from '../validate/index.ts'
import type { Reroutes } from './reroutes.ts'
import { assignArm, canaryArms, inShadow, pinnable, standInFor, type Arm, type Assignment, type Rollout } from '../../rollout/rollout.ts'
import { defaultRollout } from '../../rollout/rollout.ts'
import { type StoredRollout } from '../../stores/rollouts/rollout-store.ts'
import { requestDeadline } from '../forward/deadline.ts'
import { quoteInput } from '../../../shared/quote-input.ts'
import type { ModelCatalog } from '../../backend-client/catalog.ts'
import type { RolloutStore } from '../../stores/rollouts/rollout-store.ts'

/** Why a canary's call was retried on stable (the `reason` label of the fallback counter). */
export type FallbackReason = 'error' | 'timeout' | 'non_finite'

export interface RoutedAssignment extends Assignment {
  /** For a request the rollout sent to its canary: the baseline arm a failed canary call is retried on. */
  stable?: Pick<Arm, 'variant' | 'version'>
  /** Set when the canary failed and stable answered (or was tried) instead: why. */
  canaryFallback?: FallbackReason
}

/**
 * Routes the request again by the backend's serving set as described after `sentAt` (when the
 * call it refused was sent), waiting until `deadlineAt` at most: true when that sends it to
 * another version (the new assignment is set), false when it would go where it went.
 */
export type Reroute = (sentAt: number, deadlineAt: number) => Promise<boolean>

export interface RouteVariables {
  /** Which version and variant serve this request, and why. */
  assignment: RoutedAssignment
  /** For a request the rollout routed (not a pinned one): how a call refused for a version the backend no longer serves is routed again. */
  reroute?: Reroute
}

/** Set (`1`) on an answer from stable to a request whose canary call failed. */
export const CANARY_FALLBACK_HEADER = 'x-canary-fallback'

/** The predict input is there on predict (its entity id is the sticky key), not on tensor routes. */
type RouteNeeds = ModelVariables & RequestIdVariables & Partial<ValidateVariables> & { isolate: { rollouts: RolloutStore; reroutes: Reroutes; catalog: ModelCatalog } }

export interface RouteOptions {
  /** Header carrying the sticky key when the request names no entity. */
  experimentHeader?: string
}

/**
 * How fresh a description must be before a pin to a version it does not list is refused: a
 * version loaded since the catalog was fetched is served at once, and pins to versions that do
 * not exist cost the backend one metadata call a second at most.
 */
const PIN_RECHECK_MS = 1_000

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
 * The arm of sticky `key` under the stored rollout (else the default one, which follows the
 * versions `model` lists), on a version `model` serves, with its shadow and the stable arm a
 * canary's request may fall back to.
 */
const routed = (model: ModelDescription, stored: StoredRollout | undefined, key: string, reroutes: Reroutes): RoutedAssignment => {
  const rollout = stored?.rollout ?? defaultRollout(model)
  // A fresh object either way (assignArm's or the stand-in's): filled in place.
  const assignment: RoutedAssignment = servedAssignment(assignArm(rollout, model.name, key), rollout, stored?.revision ?? 0, model, reroutes)
  if (rollout.shadow && rollout.shadow.version !== assignment.version && inShadow(rollout, model.name, key)) assignment.shadow = rollout.shadow.version
  const stable = fallbackFor(rollout, assignment, model.versions)
  if (stable !== undefined) assignment.stable = stable
  return assignment
}

/**
 * The stable arm a canary's request falls back to: the canary's baseline, when the request's
 * sticky arm is the canary and the backend serves the baseline's version.
 */
export const fallbackFor = (rollout: Rollout, assigned: Assignment, served: readonly number[]): RoutedAssignment['stable'] => {
  const arms = canaryArms(rollout)
  if (!arms || assigned.by !== 'sticky' || assigned.variant !== arms.canary.variant || assigned.version === arms.baseline.version) return undefined
  return served.includes(arms.baseline.version) ? { variant: arms.baseline.variant, version: arms.baseline.version } : undefined
}

/**
 * Picks the version that serves a request: a pin header wins, else the sticky arm of (entity
 * id, else X-Experiment-Key, else the request id), so a user stays in one arm while weights hold.
 * The response names the version and variant (`X-Model-Version`, `X-Variant`), and
 * `X-Canary-Fallback: 1` when a canary's failed call was retried on stable.
 */
export const route = ({ experimentHeader = 'x-experiment-key' }: RouteOptions = {}): Stage<RouteNeeds, RouteVariables> =>
  async function route(c, next) {
    const { rollouts, reroutes, catalog } = c.get('isolate')
    let model = c.get('model')
    const { name } = model
    // An isolate that never read the rollout and cannot reach its store routes by the default
    // (newest version) rather than failing the request.
    const stored = await rollouts.get(name).catch((err: unknown) => {
      console.error(JSON.stringify({ level: 'warn', msg: 'rollout state unavailable; routing by the default', model: name, error: err instanceof Error ? err.message : String(err) }))
      return undefined
    })
    // A version in the path (Open Inference Protocol routes) pins just like the header.
    const pin = c.req.param('version') ?? c.req.header(HEADERS.modelVersion)
    if (pin !== undefined) {
      if (!/^[1-9][0-9]{0,8}$/.test(pin.trim())) throw new Problem(400, 'Bad Request', `${HEADERS.modelVersion} must be a version number, got ${quoteInput(pin)}`)
      const version = Number(pin)
      if (!model.versions.includes(version)) model = await catalog.describe(name, c.get('requestId'), { since: Date.now() - PIN_RECHECK_MS, deadlineAt: requestDeadline(c) })
      const rollout = stored?.rollout ?? defaultRollout(model)
      if (!model.versions.includes(version)) throw new Problem(404, 'Not Found', `model "${name}" has no version ${version} (served: ${model.versions.join(', ')})`)
      if (!pinnable(rollout).has(version)) throw new Problem(400, 'Bad Request', `version ${version} of "${name}" may not be pinned (allowed: ${[...pinnable(rollout)].join(', ')})`)
      const arm = rollout.arms.find((a) => a.version === version)
      c.set('assignment', { variant: arm?.variant ?? 'pinned', version, by: 'pin' })
    } else {
      const entity = c.get('predict')?.entity
      const key = (entity && Object.values(entity)[0]) ?? c.req.header(experimentHeader) ?? c.get('requestId')
      c.set('assignment', routed(model, stored, key, reroutes))
      c.set('reroute', async (sentAt, deadlineAt) => {
        const refused = c.get('assignment')
        const served = await catalog.describe(name, c.get('requestId'), { since: sentAt, deadlineAt })
        const next = routed(served, stored, key, reroutes)
        if (next.version === refused.version) return false
        // Counted as any request sent off a version that is not served: one whose arm is gone was, by servedAssignment.
        if (served.versions.includes(assignArm(stored?.rollout ?? defaultRollout(served), name, key).version)) {
          reroutes.record(name, stored?.revision ?? 0, refused, next, served.versions)
        }
        c.set('assignment', next)
        return true
      })
    }
    await next()
    // Also on a failed forward: which version was tried is what its caller needs to know.
    const { version, variant, canaryFallback } = c.get('assignment')
    c.res.headers.set(HEADERS.modelVersion, String(version))
    c.res.headers.set(HEADERS.variant, variant)
    if (canaryFallback !== undefined) c.res.headers.set(CANARY_FALLBACK_HEADER, '1')
  }
