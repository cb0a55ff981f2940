import type { Rollout } from '../../rollout/rollout.ts'
import type { HistoryEntry } from '../history/history-store.ts'

/** A rollout with the revision that compare-and-set checks against. */
export interface StoredRollout {
  rollout: Rollout
  revision: number
}

export interface RolloutReadOptions {
  /** Past any isolate cache: a writer derives the next state from exactly the revision it replaces. */
  fresh?: boolean
}

/**
 * A change worth a history entry (an admin's PUT, a controller decision), under the write-once
 * rule (shared/write-once.ts): the change, its entry and its count are applied together, once per
 * `id`. The entry's `revision` is the one the change makes: `expected + 1`.
 */
export interface RolloutChange {
  id: string
  entry: HistoryEntry
}

/** Where rollout state lives: in the isolate by default, Redis when configured. */
export interface RolloutStore {
  get(model: string, options?: RolloutReadOptions): Promise<StoredRollout | undefined>
  /**
   * Replaces the rollout if the stored revision is still `expected` (0: none stored yet), and
   * records `change.entry` with it; resolves with the new revision, or undefined when someone
   * else changed it first. A change whose id was applied before (a resend after an answer that
   * never came) resolves with the revision it made, whatever is stored now, and is not applied
   * or recorded again.
   */
  compareAndSet(model: string, expected: number, rollout: Rollout, change?: RolloutChange): Promise<number | undefined>
}
