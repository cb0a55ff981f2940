import type { RequestMetrics } from '../pipeline/request-metrics/store.ts'
import type { HistoryEntry, HistoryStore } from './history-store.ts'

/**
 * The rollout history, with every entry appended counted by model and action where it is
 * recorded (not re-derived from the capped list). Decisions are rare: each one is flushed with
 * its append, so a cron tick's decisions reach Redis before the tick ends.
 */
export const countedHistory = (history: HistoryStore, metrics: Pick<RequestMetrics, 'decision' | 'flush'>): HistoryStore => ({
  async append(entry: HistoryEntry): Promise<void> {
    metrics.decision(entry.model, entry.action)
    await Promise.all([history.append(entry), metrics.flush()])
  },
  list: (model, limit) => history.list(model, limit),
})
