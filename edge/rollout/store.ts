import type { ModelDescription } from '../pipeline/model/catalog.ts'
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

/** Where rollout state lives: in the isolate by default, Redis when configured. */
export interface RolloutStore {
  get(model: string, options?: RolloutReadOptions): Promise<StoredRollout | undefined>
  /**
   * Replaces the rollout if the stored revision is still `expected` (0: none stored yet);
   * resolves with the new revision, or undefined when someone else changed it first.
   */
  compareAndSet(model: string, expected: number, rollout: Rollout): Promise<number | undefined>
}

export class MemoryRolloutStore implements RolloutStore {
  private readonly rollouts = new Map<string, StoredRollout>()

  async get(model: string): Promise<StoredRollout | undefined> {
    return this.rollouts.get(model)
  }

  async compareAndSet(model: string, expected: number, rollout: Rollout): Promise<number | undefined> {
    const current = this.rollouts.get(model)?.revision ?? 0
    if (current !== expected) return undefined
    this.rollouts.set(model, { rollout, revision: current + 1 })
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
