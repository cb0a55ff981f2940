import { labelValue } from './text.ts'
import { SHADOW_DIFF_BUCKETS, type Tally } from '../stores/tallies/tally.ts'
import { shadowPairs } from '../stores/tallies/shadow.ts'

export const SHADOW_ROWS_METRIC = 'edge_infer_shadow_compared_rows_total'
export const SHADOW_AGREEING_METRIC = 'edge_infer_shadow_agreeing_rows_total'
export const SHADOW_DIFF_METRIC = 'edge_infer_shadow_probability_diff'

/**
 * Prometheus text exposition of the shadow comparison per model, served `version` and
 * `shadow_version`: rows compared, rows whose label agrees, and the |Δp| histogram (its `_sum`
 * over `_count` is the mean, histogram_quantile its p99).
 */
export const shadowExposition = (tally: Tally): string => {
  const rows: string[] = []
  const agreeing: string[] = []
  const diffs: string[] = []
  for (const pair of shadowPairs(tally)) {
    const labels = `model="${labelValue(pair.model)}",version="${pair.version}",shadow_version="${pair.shadow_version}"`
    rows.push(`${SHADOW_ROWS_METRIC}{${labels}} ${pair.rows}`)
    agreeing.push(`${SHADOW_AGREEING_METRIC}{${labels}} ${pair.agreeing}`)
    let cumulative = 0
    for (const { le, rows: n } of pair.buckets) {
      cumulative += n
      diffs.push(`${SHADOW_DIFF_METRIC}_bucket{${labels},le="${le}"} ${cumulative}`)
    }
    diffs.push(`${SHADOW_DIFF_METRIC}_sum{${labels}} ${pair.abs_diff_sum}`)
    diffs.push(`${SHADOW_DIFF_METRIC}_count{${labels}} ${cumulative}`)
  }
  return [
    `# HELP ${SHADOW_ROWS_METRIC} Rows the shadow version answered and the edge compared with the served answer, by model, served version and shadow version.`,
    `# TYPE ${SHADOW_ROWS_METRIC} counter`,
    ...rows,
    `# HELP ${SHADOW_AGREEING_METRIC} Compared rows where the shadow version chose the label the client was served.`,
    `# TYPE ${SHADOW_AGREEING_METRIC} counter`,
    ...agreeing,
    `# HELP ${SHADOW_DIFF_METRIC} Absolute difference, per compared row, between the shadow's probability of the label it chose and the served probability of that label (buckets up to ${SHADOW_DIFF_BUCKETS[SHADOW_DIFF_BUCKETS.length - 1]}, then +Inf).`,
    `# TYPE ${SHADOW_DIFF_METRIC} histogram`,
    ...diffs,
    '',
  ].join('\n')
}
