import * as z from 'zod'
import { BUCKETS, stickyBucket } from '../../shared/sticky-hash.ts'
import type { ModelDescription } from '../backend-client/catalog.ts'
import { MAX_ARMS, bucketsOf, decodeLayout, ownersOf } from './bucket-layout.ts'
import { shadowPromotionSchema } from './shadow-promotion.ts'

const variantName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/)

/**
 * A canary the controller drives: its arm's weight is stepped up while it stays healthy, then it
 * is promoted into the baseline arm, or rolled back to 0. Starting one is a PUT with this object
 * and the canary arm at its first weight (e.g. 1); the rest is the controller's bookkeeping.
 */
const canarySchema = z.strictObject({
  /** The arm under test. */
  variant: variantName,
  /** The arm it is compared against and takes weight from; it becomes the canary's version on promotion. */
  baseline_variant: variantName,
  /** When the current weight was set (epoch ms); a PUT without it starts the step now. */
  step_started_at: z.number().int().nonnegative().default(() => Date.now()),
  /** Critical prediction-drift windows since the last clean one. */
  critical_streak: z.number().int().nonnegative().default(0),
  /** Clean windows in this step, counted only as far as stepping needs. */
  clean_streak: z.number().int().nonnegative().default(0),
  /**
   * When an operator paused the canary (epoch ms; `POST …/rollout/pause`). While set the
   * controller leaves the canary as it is, weight, streaks and step clock; a resume moves
   * `step_started_at` on by the paused time, so the step's dwell is counted without the pause.
   */
  paused_at: z.number().int().nonnegative().optional(),
  /** Reason of the newest recorded hold or alert, so a repeat of it is neither recorded nor posted. */
  last_reason: z.string().max(500).optional(),
  /**
   * Orders the baseline's buckets the canary takes as it grows. Chosen at random when the
   * canary starts (and kept while it runs), so successive canaries take different users.
   */
  seed: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).optional(),
})

export type Canary = z.infer<typeof canarySchema>

/** Longest time an edge-cached answer is served; a rollout change takes effect sooner (the key holds the served version). */
export const MAX_CACHE_TTL_SECONDS = 3_600

const predictionCacheSchema = z.strictObject({
  /** How long a row's answer is served from the edge cache, at most `MAX_CACHE_TTL_SECONDS`. */
  ttl_seconds: z.number().int().min(1).max(MAX_CACHE_TTL_SECONDS),
})

const LAYOUT = new RegExp(`^[0-${MAX_ARMS - 1}]{${BUCKETS}}$`)

/**
 * How a model's traffic is split: arms with weights summing to 100 (A/B arms and the canary),
 * which versions a client may pin, and an optional shadow version.
 */
export const rolloutSchema = z
  .strictObject({
    /** Salt of the sticky hash, beside the model's name: changing it reshuffles every user. */
    salt: z.string().min(1).max(64),
    arms: z
      .array(z.strictObject({
        variant: variantName,
        version: z.number().int().positive(),
        weight: z.number().min(0).max(100),
      }))
      .min(1)
      .max(MAX_ARMS),
    /**
     * Which arm owns each sticky bucket: digit i is the index in `arms` of bucket i's arm. A PUT
     * may leave it out: it is then derived from the stored layout, so a weight change moves
     * only users between the arms whose weights changed.
     */
    layout: z.string().regex(LAYOUT, `one digit per bucket, ${BUCKETS} in all`).optional(),
    /** Versions clients may pin with X-Model-Version; empty means only the arms' versions. */
    pinnable: z.array(z.number().int().positive()).default([]),
    /** A version that also gets `percent` of requests, for comparison only; `promote` lets the controller start a canary of it. */
    shadow: z.strictObject({ version: z.number().int().positive(), percent: z.number().min(0).max(100), promote: shadowPromotionSchema.optional() }).optional(),
    canary: canarySchema.optional(),
    /** Opt-in edge prediction cache for this model's answers (docs/prediction-cache.md); absent: off. */
    cache: predictionCacheSchema.optional(),
  })
  .superRefine((r, ctx) => {
    const total = r.arms.reduce((n, a) => n + a.weight, 0)
    if (Math.abs(total - 100) > 1e-9) ctx.addIssue({ code: 'custom', path: ['arms'], message: `weights sum to ${total}, not 100` })
    r.arms.forEach((arm, i) => {
      if (Math.abs(bucketsOf(arm.weight) - (arm.weight * BUCKETS) / 100) > 1e-6) {
        ctx.addIssue({ code: 'custom', path: ['arms', i, 'weight'], message: `weights are in hundredths of a percent (one bucket each), got ${arm.weight}` })
      }
    })
    if (r.layout !== undefined && LAYOUT.test(r.layout)) layoutIssues(r.arms, r.layout).forEach((message) => ctx.addIssue({ code: 'custom', path: ['layout'], message }))
    const names = new Set(r.arms.map((a) => a.variant))
    if (names.size !== r.arms.length) ctx.addIssue({ code: 'custom', path: ['arms'], message: 'variant names must be unique' })
    if (r.canary) {
      const { variant, baseline_variant } = r.canary
      const canary = r.arms.find((a) => a.variant === variant)
      const baseline = r.arms.find((a) => a.variant === baseline_variant)
      if (!canary) ctx.addIssue({ code: 'custom', path: ['canary', 'variant'], message: `no arm is named "${variant}"` })
      if (!baseline) ctx.addIssue({ code: 'custom', path: ['canary', 'baseline_variant'], message: `no arm is named "${baseline_variant}"` })
      if (!canary || !baseline) return
      if (variant === baseline_variant) ctx.addIssue({ code: 'custom', path: ['canary'], message: 'the canary and its baseline must be different arms' })
      else if (canary.version === baseline.version) ctx.addIssue({ code: 'custom', path: ['canary'], message: `the canary and its baseline both serve version ${canary.version}` })
      // Every verdict compares the two arms on the same traffic: the baseline must keep some.
      if (baseline.weight <= 0) ctx.addIssue({ code: 'custom', path: ['canary', 'baseline_variant'], message: 'the baseline arm needs a weight above 0 to compare the canary against' })
    }
  })

export type Rollout = z.infer<typeof rolloutSchema>

/** Where a layout does not give each arm exactly the buckets its weight needs. */
const layoutIssues = (arms: readonly Arm[], layout: string): string[] => {
  const held = new Array<number>(MAX_ARMS).fill(0)
  for (const owner of decodeLayout(layout)) held[owner]++
  const beyond = held.findLastIndex((count) => count > 0)
  if (beyond >= arms.length) return [`the layout names arm ${beyond}; the arms are numbered 0 to ${arms.length - 1}`]
  return arms.flatMap((arm, i) =>
    held[i] === bucketsOf(arm.weight) ? [] : [`the layout gives arm "${arm.variant}" ${held[i]} buckets, its weight needs ${bucketsOf(arm.weight)} (omit the layout to derive it from the stored one)`])
}

export interface Assignment {
  variant: string
  version: number
  /** How the version was chosen. */
  by: 'pin' | 'sticky'
  /** A version that also gets this request, for comparison only. */
  shadow?: number
}

/**
 * The arm a sticky key lands in: the owner of its bucket in the rollout's layout. The model is
 * hashed too, so models sharing a salt still put independent users in each arm.
 */
export const assignArm = (rollout: Rollout, model: string, key: string): Assignment => {
  const arm = rollout.arms[ownersOf(rollout)[stickyBucket(model, rollout.salt, key)]]
  return { variant: arm.variant, version: arm.version, by: 'sticky' }
}

/**
 * The arm that serves an arm's users while the backend does not serve its version: the canary's
 * baseline for the canary, else the heaviest arm whose version is served.
 */
export const standInFor = (rollout: Rollout, variant: string, served: readonly number[]): Arm | undefined => {
  const serving = (arm: Arm | undefined): arm is Arm => arm !== undefined && arm.weight > 0 && served.includes(arm.version)
  const baseline = rollout.canary?.variant === variant ? rollout.arms.find((a) => a.variant === rollout.canary?.baseline_variant) : undefined
  if (serving(baseline)) return baseline
  return rollout.arms.filter(serving).reduce<Arm | undefined>((heaviest, arm) => (heaviest && heaviest.weight >= arm.weight ? heaviest : arm), undefined)
}

/** Versions a client may pin: the listed ones and every arm's. */
export const pinnable = (rollout: Rollout): Set<number> => new Set([...rollout.pinnable, ...rollout.arms.map((a) => a.version)])

/** Whether this request also goes to the shadow version (decided on the same sticky key). */
export const inShadow = (rollout: Rollout, model: string, key: string): boolean =>
  rollout.shadow !== undefined && stickyBucket(model, `${rollout.salt}:shadow`, key) < (rollout.shadow.percent / 100) * BUCKETS

export type Arm = Rollout['arms'][number]

/** The canary's arm and its baseline's, when the rollout runs a canary. */
export const canaryArms = (rollout: Rollout): { canary: Arm; baseline: Arm; state: Canary } | undefined => {
  const state = rollout.canary
  const canary = rollout.arms.find((a) => a.variant === state?.variant)
  const baseline = rollout.arms.find((a) => a.variant === state?.baseline_variant)
  return state && canary && baseline ? { canary, baseline, state } : undefined
}

// One per description the catalog holds, so routing decodes its layout once, not per request.
const defaults = new WeakMap<ModelDescription, Rollout>()

/** With no rollout configured, the newest version takes everything and any served version may be pinned. */
export const defaultRollout = (model: ModelDescription): Rollout => {
  let rollout = defaults.get(model)
  if (rollout === undefined) {
    rollout = {
      salt: model.name,
      arms: [{ variant: 'stable', version: model.versions[model.versions.length - 1] ?? 1, weight: 100 }],
      pinnable: model.versions,
    }
    defaults.set(model, rollout)
  }
  return rollout
}
