import { randomUuid } from '../random-ids.ts'
import { canaryArms, type Rollout } from './rollout.ts'
import type { RolloutChange, RolloutStore, StoredRollout } from '../stores/rollouts/rollout-store.ts'
import { controllerConfig, type ControllerConfig } from './controller-config.ts'
import type { HistoryEntry } from '../stores/history/history-store.ts'
import type { MonitorSource } from './monitor-source.ts'
import { decide, windowMinutes, type Decision } from './policy.ts'
import { canaryFromShadow, isRepeat, nextRollout } from './transition.ts'
import { judgeShadow, type ShadowCounts, type ShadowVerdict } from './shadow-promotion.ts'
import { messageOf } from '../format.ts'

export interface ControllerOptions {
  /** Where decisions are applied, and recorded in the history with them. */
  rollouts: RolloutStore
  source: MonitorSource
  /** The models to look at; those whose rollout runs a canary are driven. */
  models: () => Promise<string[]>
  config?: ControllerConfig
  /** The shadow version's counts so far, every isolate's; without it no canary is started from a shadow. */
  shadowCounts?: (model: string, version: number) => Promise<ShadowCounts>
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
  | { model: string; outcome: 'applied' | 'updated' | 'unchanged' | 'conflict'; shadow: ShadowVerdict; revision?: number }
  | { model: string; outcome: 'failed'; error: string }
  /** An operator paused the canary: nothing is read or written until it is resumed. */
  | { model: string; outcome: 'paused'; since: number }

/**
 * The rollout controller. Each `tick()` reads, for every model whose rollout runs a canary, the
 * canary and baseline arms over the time since the current step started, decides by the
 * policy, and applies the decision by compare-and-set on the revision it read. A model without
 * a canary whose shadow has `promote` set gets a canary of the shadow version once the shadow
 * qualifies (shadow-promotion.ts). Models are independent: one failing is logged and the others go on.
 */
export const createController = ({
  rollouts,
  source,
  models,
  config = controllerConfig(),
  shadowCounts,
  now: clock = Date.now,
  notify,
  log = console.log,
}: ControllerOptions) => {
  const report = (outcome: TickOutcome): TickOutcome => {
    const detail = 'decision' in outcome
      ? { action: outcome.decision.action, from_weight: outcome.decision.from_weight, to_weight: outcome.decision.to_weight, reason: outcome.decision.reason }
      : 'shadow' in outcome
        ? { shadow: outcome.shadow.action, ...('reason' in outcome.shadow ? { reason: outcome.shadow.reason } : {}) }
        : 'since' in outcome
          ? { paused_at: new Date(outcome.since).toISOString() }
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

  /**
   * Applies a decision that is news with its history entry, and hands the entry to `notify` once
   * recorded; undefined when another writer moved the rollout first.
   */
  const record = async (model: string, stored: StoredRollout, next: Rollout, now: number, decided: Pick<HistoryEntry, 'action' | 'variant' | 'from_weight' | 'to_weight' | 'reason' | 'numbers'>): Promise<number | undefined> => {
    // Resends within this tick carry it; another run's decision on the same revision has its own and loses the compare-and-set.
    const id = `controller:${randomUuid()}`
    const entry: HistoryEntry = { id, model, time: new Date(now).toISOString(), actor: 'controller', ...decided, revision: stored.revision + 1 }
    const revision = await apply(model, stored.revision, next, { id, entry })
    if (revision !== undefined) notify?.(entry)
    return revision
  }

  /**
   * The shadow rule for a model without a canary: a window is begun (or begun again) by storing
   * the shadow's counts now; within it, a shadow that qualifies becomes a canary, the start
   * recorded in the history (action `start_canary`) and handed to `notify` like every decision.
   */
  const promoteShadow = async (model: string, stored: StoredRollout, now: number, counts: NonNullable<ControllerOptions['shadowCounts']>): Promise<TickOutcome | undefined> => {
    const { shadow } = stored.rollout
    if (!shadow?.promote) return undefined
    const sofar = await counts(model, shadow.version)
    const verdict = judgeShadow(shadow.promote, shadow.version, sofar, now)
    if (verdict.action === 'restart') {
      const window = { started_at: now, version: shadow.version, at_start: sofar }
      const next = { ...stored.rollout, shadow: { ...shadow, promote: { ...shadow.promote, window } } }
      const revision = await rollouts.compareAndSet(model, stored.revision, next)
      return report(revision === undefined ? { model, outcome: 'conflict', shadow: verdict } : { model, outcome: 'updated', shadow: verdict, revision })
    }
    const next = verdict.action === 'start' ? canaryFromShadow(stored.rollout, now) : undefined
    if (next === undefined) return report({ model, outcome: 'unchanged', shadow: verdict })
    if (typeof next === 'string') return report({ model, outcome: 'unchanged', shadow: { action: 'wait', reason: `${verdict.reason}; not started: ${next}`, window: verdict.window } })
    const revision = await record(model, stored, next, now, { action: 'start_canary', variant: next.canary?.variant ?? null, from_weight: 0, to_weight: shadow.promote.canary_percent, reason: verdict.reason })
    return report(revision === undefined ? { model, outcome: 'conflict', shadow: verdict } : { model, outcome: 'applied', shadow: verdict, revision })
  }

  const control = async (model: string, now: number): Promise<TickOutcome | undefined> => {
    const stored = await rollouts.get(model)
    const arms = stored && canaryArms(stored.rollout)
    if (stored && !arms && shadowCounts) return promoteShadow(model, stored, now, shadowCounts)
    if (!stored || !arms) return undefined
    if (arms.state.paused_at !== undefined) return report({ model, outcome: 'paused', since: arms.state.paused_at })
    const minutes = windowMinutes(arms.state.step_started_at, now, config)
    const since = arms.state.step_started_at
    const [stable, canary] = await Promise.all([source.arm(model, arms.baseline.version, minutes, since), source.arm(model, arms.canary.version, minutes, since)])
    const { decision, streaks } = decide({ rollout: stored.rollout, stable, canary, config, now })
    const next = nextRollout(stored.rollout, decision, streaks, now)
    if (!next) return report({ model, outcome: 'unchanged', decision })
    if (isRepeat(stored.rollout, decision)) {
      const revision = await rollouts.compareAndSet(model, stored.revision, next)
      return report(revision === undefined ? { model, outcome: 'conflict', decision } : { model, outcome: 'updated', decision, revision })
    }
    const { action, from_weight, to_weight, reason, numbers } = decision
    const revision = await record(model, stored, next, now, { action, variant: arms.state.variant, from_weight, to_weight, reason, numbers })
    return report(revision === undefined ? { model, outcome: 'conflict', decision } : { model, outcome: 'applied', decision, revision })
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
