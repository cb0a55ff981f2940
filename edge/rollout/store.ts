import type { ModelDescription } from '../backend-client/catalog.ts'
import type { HistoryEntry, HistoryStore } from './history-store.ts'
import type { Rollout } from './rollout.ts'

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

// One per description the catalog holds, so routing decodes its layout once, not per request.
const defaults = new WeakMap<ModelDescription, Rollout>()

/** With no rollout configured, the newest version takes everything and any served version may be pinned. */
export const defaultRollout = (model: ModelDescription): Rollout => {
  let rollout = defaults.get(model)
  if (rollout === undefined) {
    rollout = {
      salt: model.name,
      arms: [{ variant: 'stable', version: model.versions[model.versions.length - 1] ?? 1, weight: 100 }],
      pinnable: model.versions,
    }
    defaults.set(model, rollout)
  }
  return rollout
}
