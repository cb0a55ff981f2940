import type { Rollout } from '../../rollout/rollout.ts'
import type { HistoryStore } from '../history/history-store.ts'
import type { RolloutChange, RolloutStore, StoredRollout } from './rollout-store.ts'

export interface MemoryRolloutStoreOptions {
  /** Where the entries of changes go (the isolate's history). */
  history?: HistoryStore
}

export class MemoryRolloutStore implements RolloutStore {
  private readonly rollouts = new Map<string, StoredRollout>()
  /** The revision each change made, by id. */
  private readonly applied = new Map<string, number>()
  private readonly history: HistoryStore | undefined

  constructor({ history }: MemoryRolloutStoreOptions = {}) {
    this.history = history
  }

  async get(model: string): Promise<StoredRollout | undefined> {
    return this.rollouts.get(model)
  }

  async compareAndSet(model: string, expected: number, rollout: Rollout, change?: RolloutChange): Promise<number | undefined> {
    const made = change && this.applied.get(change.id)
    if (made !== undefined) return made
    const current = this.rollouts.get(model)?.revision ?? 0
    if (current !== expected) return undefined
    this.rollouts.set(model, { rollout, revision: current + 1 })
    if (change) {
      this.applied.set(change.id, current + 1)
      await this.history?.append(change.entry)
    }
    return current + 1
  }
}
