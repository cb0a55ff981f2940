import type { RequestMetrics } from '../tallies/tally.ts'
import type { HistoryEntry, HistoryStore } from './history-store.ts'

/**
 * The isolate's own rollout history (no Redis), with every entry appended counted by model and
 * action where it is recorded (not re-derived from the capped list). With Redis, the rollout
 * store's script counts each entry it writes.
 */
export const countedHistory = (history: HistoryStore, metrics: Pick<RequestMetrics, 'decision'>): HistoryStore => ({
  async append(entry: HistoryEntry): Promise<void> {
    metrics.decision(entry.model, entry.action)
    await history.append(entry)
  },
  list: (model, limit) => history.list(model, limit),
})
