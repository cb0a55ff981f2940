import { BACKEND_METRICS } from '../../shared/backend-metrics.ts'
import { parsePrometheusText } from '../../shared/prometheus-text.ts'

/** Reads the batch-size histogram the real server exports, to learn what the batcher formed. */

const BATCH_SIZE = BACKEND_METRICS.batchSize

export interface BatchCounters {
  /** Rows over all executed batches. */
  rows: number
  batches: number
}

/** Sums `<histogram>_sum` and `_count` over every version of one model in Prometheus text. */
export const parseBatchCounters = (text: string, model: string): BatchCounters => {
  const counters: BatchCounters = { rows: 0, batches: 0 }
  for (const { name, labels, value } of parsePrometheusText(text)) {
    if (labels.model !== model) continue
    if (name === `${BATCH_SIZE}_sum`) counters.rows += value
    else if (name === `${BATCH_SIZE}_count`) counters.batches += value
  }
  return counters
}

export const scrapeBatchCounters = async (url: string, model: string): Promise<BatchCounters> => {
  const res = await fetch(`${url}/metrics`)
  if (!res.ok) throw new Error(`${url}/metrics answered ${res.status}`)
  return parseBatchCounters(await res.text(), model)
}

/** Mean rows per batch between two scrapes; NaN when no batch ran. */
export const meanBatchSize = (before: BatchCounters, after: BatchCounters): number => {
  const batches = after.batches - before.batches
  return batches > 0 ? (after.rows - before.rows) / batches : Number.NaN
}
