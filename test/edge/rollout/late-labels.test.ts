import { describe, expect, it } from 'vitest'
import { createController } from '../../../edge/rollout/controller.ts'
import { controllerConfig } from '../../../edge/rollout/controller-config.ts'
import { withEdgeCounts } from '../../../edge/rollout/edge-counted-source.ts'
import { MemoryGroundTruth } from '../../../edge/stores/ground-truth/memory.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { MemoryHistoryStore } from '../../../edge/stores/history/memory.ts'
import { minuteOf } from '../../../shared/drift/report.ts'
import { FakeMonitorSource, MINUTE, T0, canaryRollout } from './support.ts'

const MODEL = 'credit-risk'
// A window cap shorter than the wait, so the labels of the step's first minutes are outside the
// backend's window and must be read from the step's start.
const config = controllerConfig({ dwellMinutes: 10, minLabels: 20, labelMaxDelayMinutes: 30, maxWindowMinutes: 5 })

/**
 * A canary one clean window from stepping at T0, its arms' numbers healthy in the backend's
 * window, and a real ground-truth store the controller reads labels from by serving minute.
 */
const setup = async (feedback: boolean) => {
  const clock = { now: T0 }
  const store = new MemoryGroundTruth({ now: () => clock.now })
  const rollouts = new MemoryRolloutStore({ history: new MemoryHistoryStore() })
  await rollouts.compareAndSet(MODEL, 0, canaryRollout(1, { clean_streak: 2 }))
  const source = withEdgeCounts(new FakeMonitorSource(), store, { threshold: async () => 0.5, collectsLabels: async () => feedback, now: () => clock.now })
  const controller = createController({ rollouts, source, models: async () => [MODEL], config, now: () => clock.now, log: () => undefined })
  const tickAt = async (minute: number) => {
    clock.now = T0 + minute * MINUTE
    const [outcome] = await controller.tick()
    return outcome && 'decision' in outcome ? outcome.decision : undefined
  }
  /** Predictions each arm served at `minute`: 30 rows, stable scoring 0.2, the canary 0.8. */
  const serve = async (minute: number) => {
    for (const [version, score] of [[2, 0.2], [3, 0.8]] as const) {
      await store.serve({ tenant: 't', requestId: `req-${version}-${minute}` }, { model: MODEL, version, variant: version === 3 ? 'canary' : 'stable', at: T0 + minute * MINUTE, labels: ['no', 'yes'], scores: new Array<number>(30).fill(score) }, 86_400)
    }
  }
  /** Every row of `minute`'s predictions labelled "no", as they arrive now: stable right, the canary wrong. */
  const label = async (minute: number) => {
    for (const version of [2, 3]) {
      const key = { tenant: 't', requestId: `req-${version}-${minute}` }
      const [served] = await store.records([key])
      await store.label(served!.scores.map((score, index) => ({
        key, servedId: served!.servedId, index, label: 'no',
        count: { model: MODEL, version, minute: minuteOf(served!.at), score, positive: false, delaySeconds: (clock.now - served!.at) / 1_000 },
      })))
    }
  }
  return { tickAt, serve, label, rollouts }
}

describe('a canary judged on labels that arrive after its step', () => {
  it('waits past the dwell for the labels of the predictions served in the step, and rolls back on them when they come', async () => {
    const { tickAt, serve, label } = await setup(true)
    await serve(2)
    const waiting = await tickAt(10)
    expect(waiting).toMatchObject({ action: 'hold', from_weight: 1 })
    expect(waiting!.reason).toBe('waiting for labels of the predictions served at 1%: 0 canary and 0 stable of 20 labels, waiting up to 30 min past the dwell')
    // The labels come 13 minutes after the predictions, 3 after the dwell ended.
    await tickAt(15)
    await label(2)
    const judged = await tickAt(16)
    expect(judged).toMatchObject({ action: 'rollback', to_weight: 0 })
    expect(judged!.reason).toMatch(/^canary realized accuracy 0\.000 is worse than stable's 1\.000/)
    expect(judged!.numbers.canary.realized).toMatchObject({ labels: 30 })
  })

  it('steps on the other rules once the bound passes without the labels, and at once for a model without feedback', async () => {
    const late = await setup(true)
    await late.serve(2)
    expect(await late.tickAt(39)).toMatchObject({ action: 'hold' })
    expect(await late.tickAt(40)).toMatchObject({ action: 'step', to_weight: 5 })
    const none = await setup(false)
    await none.serve(2)
    expect(await none.tickAt(10)).toMatchObject({ action: 'step', to_weight: 5 })
  })

  it('judges on the step\'s labels as soon as both arms have them, not on labels of predictions served before the step', async () => {
    const { tickAt, serve, label } = await setup(true)
    // Served (and labelled) before the step began: not the step's.
    await serve(-3)
    await label(-3)
    expect(await tickAt(10)).toMatchObject({ action: 'hold' })
    await serve(4)
    await tickAt(11)
    await label(4)
    expect(await tickAt(12)).toMatchObject({ action: 'rollback' })
  })
})
