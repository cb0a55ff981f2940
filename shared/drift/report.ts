import * as z from 'zod'
import { qualityFigures } from '../quality.ts'

export const MINUTE_MS = 60_000

/** The epoch minute of a time in ms: how both tiers number the minutes their counts are kept by. */
export const minuteOf = (ms: number): number => Math.floor(ms / MINUTE_MS)

/** A window's verdict; `insufficient` below the rows a verdict needs, never `ok`. */
export const verdict = z.enum(['ok', 'warning', 'critical', 'insufficient'])

export type Verdict = z.infer<typeof verdict>

/** One of the consecutive windows a report evaluated, with its own statistic and verdict. */
export const driftWindow = z.object({
  from_minute: z.number().int().describe('minutes since the epoch, inclusive'),
  to_minute: z.number().int().describe('minutes since the epoch, inclusive'),
  rows: z.number().nonnegative(),
  psi: z.number().nonnegative(),
  verdict: verdict.describe("the worst of PSI's, (numeric features, predictions) the effect size's location and shape gates, and (categorical features) the category shift's"),
  smd: z.number().nullable().optional().describe('standardized mean difference against the baseline (numeric features, logit of the predictions); null when the window cannot tell'),
  z: z.number().nullable().optional().describe('smd over its standard error'),
  wasserstein: z.number().nonnegative().nullable().optional().describe('Wasserstein-1 against the baseline over its sd (numeric features, logit of the predictions); null when the window cannot tell'),
  tvd: z.number().min(0).max(1).optional().describe('total variation distance against the baseline (categorical features)'),
})

export type DriftWindow = z.infer<typeof driftWindow>

const windows = z.array(driftWindow).describe("the consecutive windows evaluated, oldest first; the last is the report's current one")

/**
 * The part of a version's drift report (`GET /v2/models/{m}/versions/{v}/drift`) that the edge's
 * rollout controller acts on, and the per-window history the console draws. The backend's report
 * type extends it; the edge checks a report on arrival with it, since a misread number could roll
 * a version back. The history is optional here so an edge still reads a backend that sends none.
 */
export const controllerDriftReport = z.object({
  version: z.number().int().positive(),
  rows: z.number().nonnegative(),
  dataset: z.object({ verdict }),
  features: z.array(z.object({
    name: z.string(),
    verdict,
    windows,
    effect_size: z.object({
      wasserstein: z.number().nonnegative().nullable().describe('Wasserstein-1 against the baseline over its sd'),
      wasserstein_thresholds: z.object({ warning: z.number(), critical: z.number() }).nullable()
        .describe('no-drift bounds of `wasserstein` for this window\'s rows, at the false-alarm rate of |z| ≥ z_warning (z_critical)'),
      smd_verdict: verdict.describe('the location gate: |smd| ≥ min_effect and |z| ≥ z_warning (z_critical)'),
      wasserstein_verdict: verdict.describe('the shape gate: wasserstein ≥ min_effect and ≥ its warning (critical) bound'),
    }).loose().optional().describe('numeric features: the current window\'s effect size; `verdict` the worse of its two gates'),
    category_shift: z.object({
      tvd: z.number().min(0).max(1).describe('total variation distance: the share of rows that changed cell'),
      p_value: z.number().min(0).max(1).describe('chi-square test of homogeneity over the same cells'),
      thresholds: z.object({ min_tvd: z.number(), p_warning: z.number(), p_critical: z.number() }),
      verdict: verdict.describe('tvd ≥ min_tvd and p_value ≤ p_warning (p_critical)'),
    }).optional().describe('categorical features: the current window\'s category shift'),
  }).loose()).optional(),
  prediction: z.object({
    counts: z.array(z.number().nonnegative()),
    nan_outputs: z.number().nonnegative(),
    windows: windows.optional(),
    baseline_counts: z.array(z.number().nonnegative()).optional().describe("the baseline's rows per prediction bin, the bins of `counts`"),
    estimated_quality: qualityFigures.optional().describe("label-free estimate (CBPE) from the window's prediction bins and the baseline's calibration"),
  }),
  health: z.object({ requests: z.number().nonnegative(), errors: z.number().nonnegative(), p95_ms: z.number().nonnegative().nullable() }),
})

export type ControllerDriftReport = z.infer<typeof controllerDriftReport>
