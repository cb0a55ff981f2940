import { randomUuid } from '../random-ids.ts'
import { canaryArms, type Rollout } from './rollout.ts'
import type { RolloutChange, RolloutStore } from '../stores/rollouts/rollout-store.ts'
import { controllerConfig, type ControllerConfig } from './controller-config.ts'
import type { HistoryEntry } from '../stores/history/history-store.ts'
import type { MonitorSource } from './monitor-source.ts'
import { decide, windowMinutes, type Decision } from './policy.ts'
import { isRepeat, nextRollout } from './transition.ts'
import { messageOf } from '../format.ts'

export interface ControllerOptions {
  /** Where decisions are applied, and recorded in the history with them. */
  rollouts: RolloutStore
  source: MonitorSource
  /** The models to look at; those whose rollout runs a canary are driven. */
  models: () => Promise<string[]>
  config?: ControllerConfig
  now?: () => number
  /** Hands each recorded entry on; the worker posts it to the webhook in the background. */
  notify?: (entry: HistoryEntry) => void
  log?: (line: string) => void
}

/** Sends of one decision's write in a tick: its first, and resends with its id while no answer comes. */
export const DECISION_SENDS = 3

/**
 * What a tick did for one model with a canary: `applied` wrote and recorded a decision;
 * `updated` only wrote the streaks behind a repeated hold or alert; `unchanged` wrote nothing;
 * `conflict` lost the compare-and-set to another writer (another run or an admin), which has
 * then already moved the state: nothing is applied twice, the next tick decides afresh.
 */
export type TickOutcome =
  | { model: string; outcome: 'applied' | 'updated'; decision: Decision; revision: number }
  | { model: string; outcome: 'unchanged' | 'conflict'; decision: Decision }
  | { model: string; outcome: 'failed'; error: string }

/**
 * The rollout controller. Each `tick()` reads, for every model whose rollout runs a canary, the
 * canary and baseline arms over the time since the current step started, decides by the
 * policy, and applies the decision by compare-and-set on the revision it read. Models are
 * independent: one failing is logged and the others go on.
 */
export const createController = ({
  rollouts,
  source,
  models,
  config = controllerConfig(),
  now: clock = Date.now,
  notify,
  log = console.log,
}: ControllerOptions) => {
  const report = (outcome: TickOutcome): TickOutcome => {
    const detail = 'decision' in outcome
      ? { action: outcome.decision.action, from_weight: outcome.decision.from_weight, to_weight: outcome.decision.to_weight, reason: outcome.decision.reason }
      : { error: outcome.error }
    log(JSON.stringify({ level: outcome.outcome === 'failed' ? 'error' : 'info', msg: 'rollout controller', model: outcome.model, outcome: outcome.outcome, ...detail }))
    return outcome
  }

  /**
   * Applies a decision with its history entry, resending the same change (same id) while Redis
   * gives no answer: a write that landed late is then answered by its id, so the decision is
   * recorded once and handed to `notify` once, instead of applied unseen.
   */
  const apply = async (model: string, expected: number, next: Rollout, change: RolloutChange): Promise<number | undefined> => {
    for (let sent = 1; ; sent++) {
      try {
        return await rollouts.compareAndSet(model, expected, next, change)
      } catch (error) {
        if (sent >= DECISION_SENDS) throw error
      }
    }
  }

  const control = async (model: string, now: number): Promise<TickOutcome | undefined> => {
    const stored = await rollouts.get(model)
    const arms = stored && canaryArms(stored.rollout)
    if (!stored || !arms) return undefined
    const minutes = windowMinutes(arms.state.step_started_at, now, config)
    const [stable, canary] = await Promise.all([source.arm(model, arms.baseline.version, minutes), source.arm(model, arms.canary.version, minutes)])
    const { decision, streaks } = decide({ rollout: stored.rollout, stable, canary, config, now })
    const next = nextRollout(stored.rollout, decision, streaks, now)
    if (!next) return report({ model, outcome: 'unchanged', decision })
    if (isRepeat(stored.rollout, decision)) {
      const revision = await rollouts.compareAndSet(model, stored.revision, next)
      return report(revision === undefined ? { model, outcome: 'conflict', decision } : { model, outcome: 'updated', decision, revision })
    }
    // Resends within this tick carry it; another run's decision on the same revision has its own and loses the compare-and-set.
    const id = `controller:${randomUuid()}`
    const entry: HistoryEntry = {
      id,
      model,
      time: new Date(now).toISOString(),
      actor: 'controller',
      action: decision.action,
      variant: arms.state.variant,
      from_weight: decision.from_weight,
      to_weight: decision.to_weight,
      reason: decision.reason,
      revision: stored.revision + 1,
      numbers: decision.numbers,
    }
    const revision = await apply(model, stored.revision, next, { id, entry })
    if (revision === undefined) return report({ model, outcome: 'conflict', decision })
    notify?.(entry)
    return report({ model, outcome: 'applied', decision, revision })
  }

  return {
    async tick(): Promise<TickOutcome[]> {
      const now = clock()
      const outcomes = await Promise.all(
        (await models()).map((model) => control(model, now).catch((error: unknown) => report({ model, outcome: 'failed', error: messageOf(error) }))),
      )
      return outcomes.filter((o) => o !== undefined)
    },
  }
}
