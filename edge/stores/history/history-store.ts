import type { Action, DecisionNumbers } from '../../rollout/policy.ts'

/** One change to a model's rollout: a controller decision or an admin's PUT. */
export interface HistoryEntry {
  /** Unique per entry, so a receiver can drop a webhook delivery it already has. */
  id: string
  model: string
  /** ISO 8601. */
  time: string
  /** "controller", or the name of the admin key that made a manual change. */
  actor: string
  /** `pause` and `resume`: an admin paused or resumed the canary (`POST …/rollout/pause`, `…/resume`). */
  action: Action | 'manual' | 'pause' | 'resume'
  /** The canary arm's variant and weights before and after; null for a manual change without a canary. */
  variant: string | null
  from_weight: number | null
  to_weight: number | null
  reason: string
  /** The rollout revision this entry produced. */
  revision: number
  /** The windows behind a controller decision. */
  numbers?: DecisionNumbers
}

/** Where the history is read: in the isolate by default, a capped Redis list when configured. */
export interface HistoryReader {
  /** Newest first. */
  list(model: string, limit: number): Promise<HistoryEntry[]>
}

/** A history the isolate's own rollout store appends to (with Redis, the rollout store's script writes the entries). */
export interface HistoryStore extends HistoryReader {
  append(entry: HistoryEntry): Promise<void>
}

/** Entries kept per model; older ones are dropped. */
export const HISTORY_CAP = 500
