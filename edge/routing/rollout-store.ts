import type { ModelDescription } from '../catalog/model-catalog.ts'
import type { Rollout } from './rollout.ts'

/** Where rollout state lives: in the isolate by default, Redis when configured (later). */
export interface RolloutStore {
  get(model: string): Promise<Rollout | undefined>
  put(model: string, rollout: Rollout): Promise<void>
}

export class MemoryRolloutStore implements RolloutStore {
  private readonly rollouts = new Map<string, Rollout>()

  async get(model: string): Promise<Rollout | undefined> {
    return this.rollouts.get(model)
  }

  async put(model: string, rollout: Rollout): Promise<void> {
    this.rollouts.set(model, rollout)
  }
}

/** With no rollout configured, the newest version takes everything and any served version may be pinned. */
export const defaultRollout = (model: ModelDescription): Rollout => ({
  salt: model.name,
  arms: [{ variant: 'stable', version: model.versions[model.versions.length - 1] ?? 1, weight: 100 }],
  pinnable: model.versions,
})
