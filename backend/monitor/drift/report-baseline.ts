import { z } from 'zod'
import { BASELINE_FORMAT } from './baseline-format.ts'
import { BASELINE_FILE, edges, parseBaselineFile } from './baseline-file.ts'

const counts = z.array(z.number().nonnegative())
const thresholds = z.object({ statistic: z.literal('psi'), window: z.number().int().positive(), warning: z.number().positive(), critical: z.number().positive() }).passthrough()
const common = { name: z.string(), missing: z.number().nonnegative(), missing_rate: z.number().min(0).max(1), thresholds }

/** What the drift report reads of `baseline.json`: reference counts and calibrated thresholds. */
const reportBaseline = z.object({
  format: z.literal(BASELINE_FORMAT),
  model: z.string(),
  version: z.number().int(),
  rows: z.number().int().positive(),
  features: z.array(z.discriminatedUnion('kind', [
    z.object({ ...common, kind: z.literal('numeric'), edges, counts, min: z.number(), max: z.number() }),
    z.object({ ...common, kind: z.literal('categorical'), categories: z.array(z.string()), counts: z.record(z.string(), z.number().nonnegative()) }),
  ])),
  prediction: z.object({ edges, counts, class_counts: z.record(z.string(), z.number()), thresholds }),
})

/**
 * The reference side of a version's drift report. Throws, saying what is wrong, for a baseline
 * of another format (a model built before thresholds existed must be rebuilt, not guessed at).
 */
export type ReportBaseline = z.infer<typeof reportBaseline>

export const readReportBaseline = async (dir: string): Promise<ReportBaseline> => {
  const baseline = await parseBaselineFile(dir, reportBaseline, 'cannot back a drift report')
  if (!baseline) throw new Error(`${BASELINE_FILE} is missing`)
  return baseline
}
