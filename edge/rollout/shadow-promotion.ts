import * as z from 'zod'
import { BUCKETS } from '../../shared/sticky-hash.ts'
import { bucketsOf } from './bucket-layout.ts'
import { shadowCalls, shadowPairs } from '../stores/tallies/shadow.ts'
import type { Tally } from '../stores/tallies/tally.ts'

/** Longest window the shadow rule may take: the cumulative counts it differences are kept for good, but a day is the controller's longest view. */
export const MAX_SHADOW_WINDOW_MINUTES = 24 * 60

/** The shadow's counts since the edge began counting, or over a window as their difference. */
export const shadowCountsSchema = z.strictObject({
  /** Rows compared with the served answer, and how many of them agreed on the label. */
  rows: z.number().int().nonnegative(),
  agreeing: z.number().int().nonnegative(),
  /** Calls to the shadow version, and how many failed. */
  calls: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
})

export type ShadowCounts = z.infer<typeof shadowCountsSchema>

/**
 * `shadow.promote`: when set, the controller starts a canary of the shadow version once the
 * shadow has, within one window of `window_minutes`, at least `min_rows` compared rows, at least
 * `min_agreement` of them agreeing, and at most `max_error_rate` of its calls failed. The canary
 * starts at `canary_percent` of all traffic, taken from the heaviest arm, which becomes its baseline.
 */
export const shadowPromotionSchema = z.strictObject({
  min_rows: z.number().int().positive(),
  min_agreement: z.number().min(0).max(1),
  max_error_rate: z.number().min(0).max(1),
  window_minutes: z.number().int().min(1).max(MAX_SHADOW_WINDOW_MINUTES),
  canary_percent: z.number().gt(0).lt(100).refine((w) => Math.abs(bucketsOf(w) - (w * BUCKETS) / 100) <= 1e-6, { message: 'weights are in hundredths of a percent (one bucket each)' }),
  /**
   * The controller's bookkeeping: when the current window began (epoch ms), for which shadow
   * version, and the shadow's counts then. A PUT leaves it out; the next tick starts a window.
   */
  window: z.strictObject({ started_at: z.number().int().nonnegative(), version: z.number().int().positive(), at_start: shadowCountsSchema }).optional(),
})

export type ShadowPromotion = z.infer<typeof shadowPromotionSchema>

/** The shadow version's counts in `tally`, over every served version it was compared with. */
export const shadowCountsOf = (tally: Tally, model: string, version: number): ShadowCounts => {
  const pairs = shadowPairs(tally).filter((p) => p.model === model && p.shadow_version === version)
  return {
    rows: pairs.reduce((n, p) => n + p.rows, 0),
    agreeing: pairs.reduce((n, p) => n + p.agreeing, 0),
    ...shadowCalls(tally, model, version),
  }
}

/**
 * What the shadow rule does on a tick: `start` a canary of the shadow version; `restart` the
 * window (none yet, it is over, or the counts went back: another shadow version or a Redis
 * flushed); or `wait`, with the reason the window does not qualify yet.
 */
export type ShadowVerdict =
  | { action: 'start'; reason: string; window: ShadowCounts }
  | { action: 'restart' }
  | { action: 'wait'; reason: string; window: ShadowCounts }

const percent = (rate: number): string => `${(rate * 100).toFixed(2)}%`

/** The shadow rule on the counts now, against the window the stored option holds. */
export const judgeShadow = (promote: ShadowPromotion, version: number, now: ShadowCounts, at: number): ShadowVerdict => {
  const { window } = promote
  if (!window || window.version !== version || at - window.started_at >= promote.window_minutes * 60_000) return { action: 'restart' }
  const seen: ShadowCounts = {
    rows: now.rows - window.at_start.rows,
    agreeing: now.agreeing - window.at_start.agreeing,
    calls: now.calls - window.at_start.calls,
    errors: now.errors - window.at_start.errors,
  }
  if (Object.values(seen).some((n) => n < 0)) return { action: 'restart' }
  if (seen.rows < promote.min_rows) return { action: 'wait', reason: `waiting for data: shadow v${version} compared ${seen.rows} of ${promote.min_rows} rows`, window: seen }
  const agreement = seen.agreeing / seen.rows
  const errorRate = seen.calls > 0 ? seen.errors / seen.calls : 0
  const figures = `agreed on ${percent(agreement)} of ${seen.rows} rows, error rate ${percent(errorRate)} (${seen.errors}/${seen.calls} calls)`
  if (agreement < promote.min_agreement) return { action: 'wait', reason: `shadow v${version} ${figures}: agreement below ${percent(promote.min_agreement)}`, window: seen }
  if (errorRate > promote.max_error_rate) return { action: 'wait', reason: `shadow v${version} ${figures}: error rate above ${percent(promote.max_error_rate)}`, window: seen }
  return { action: 'start', reason: `shadow v${version} ${figures} within ${promote.window_minutes} min: canary started at ${promote.canary_percent}%`, window: seen }
}

const sameWindow = (a: ShadowPromotion['window'], b: ShadowPromotion['window']): boolean =>
  a !== undefined && b !== undefined && a.started_at === b.started_at && a.version === b.version &&
  (Object.keys(a.at_start) as Array<keyof ShadowCounts>).every((k) => a.at_start[k] === b.at_start[k])

/**
 * A PUT's `shadow.promote.window`, unless it restates the stored one as GET showed it (a
 * read-modify-write sends it back): only the controller keeps it, and a client's would steer the rule.
 */
export const shadowWindowErrors = (put: { shadow?: { promote?: ShadowPromotion } }, stored: { shadow?: { promote?: ShadowPromotion } } | undefined): Array<{ path: string; message: string }> => {
  const window = put.shadow?.promote?.window
  return window === undefined || sameWindow(window, stored?.shadow?.promote?.window)
    ? []
    : [{ path: 'shadow.promote.window', message: 'is kept by the rollout controller; a PUT may leave it out or restate the stored value, not set it' }]
}
