import { z } from 'zod'
import { BASELINE_FORMAT } from './baseline-format.ts'
import { BASELINE_FILE, edges, parseBaselineFile } from './baseline-file.ts'

const counts = z.array(z.number().nonnegative())
const thresholds = z.object({ statistic: z.literal('psi'), window: z.number().int().positive(), warning: z.number().positive(), critical: z.number().positive() }).passthrough()
const common = { name: z.string(), missing: z.number().nonnegative(), missing_rate: z.number().min(0).max(1), thresholds }
const effectSize = z.object({
  mean: z.number(),
  sd: z.number().nonnegative(),
  thresholds: z.object({
    statistic: z.literal('smd'),
    window: z.number().int().positive(),
    min_effect: z.number().positive(),
    z_warning: z.number().positive(),
    z_critical: z.number().positive(),
  }).passthrough(),
})
const share = z.number().min(0).max(1)

/**
 * What the drift report reads of `baseline.json`: reference counts, the moments the effect sizes
 * compare against, calibrated thresholds, and the prediction bins' calibration (label-positive
 * reference rows and mean score per bin) for the label-free quality estimate.
 */
const reportBaseline = z.object({
  format: z.literal(BASELINE_FORMAT),
  model: z.string(),
  version: z.number().int(),
  rows: z.number().int().positive(),
  features: z.array(z.discriminatedUnion('kind', [
    z.object({ ...common, kind: z.literal('numeric'), edges, counts, min: z.number(), max: z.number(), effect_size: effectSize }),
    z.object({ ...common, kind: z.literal('categorical'), categories: z.array(z.string()), counts: z.record(z.string(), z.number().nonnegative()) }),
  ])),
  prediction: z.object({
    edges,
    counts,
    class_counts: z.record(z.string(), z.number()),
    thresholds,
    effect_size: effectSize,
    calibration: z.object({ positives: counts, mean_probability: z.array(share) }),
  }).refine(
    ({ counts: c, calibration }) => calibration.positives.length === c.length && calibration.mean_probability.length === c.length && calibration.positives.every((p, i) => p <= c[i]),
    { message: 'calibration needs one positives count (at most the bin\'s rows) and one mean probability per prediction bin', path: ['calibration'] },
  ),
})

/**
 * The reference side of a version's drift report. Throws, saying what is wrong, for a baseline
 * of another format: one built before thresholds, or before the effect sizes and calibration of
 * format 3, must be rebuilt (`npm run models:build`), not guessed at.
 */
export type ReportBaseline = z.infer<typeof reportBaseline>

export const readReportBaseline = async (dir: string): Promise<ReportBaseline> => {
  const baseline = await parseBaselineFile(dir, reportBaseline, `cannot back a drift report (format ${BASELINE_FORMAT} expected; rebuild the model's baseline)`)
  if (!baseline) throw new Error(`${BASELINE_FILE} is missing`)
  return baseline
}
