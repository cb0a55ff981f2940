import { describe, expect, it, vi } from 'vitest'
import { DECISION_SENDS, createController, type ControllerOptions, type TickOutcome } from '../../../edge/rollout/controller.ts'
import { MemoryHistoryStore } from '../../../edge/stores/history/memory.ts'
import { type HistoryEntry } from '../../../edge/stores/history/history-store.ts'
import { rolloutSchema, type Rollout } from '../../../edge/rollout/rollout.ts'
import { pausedRollout, resumedRollout } from '../../../edge/rollout/transition.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { type RolloutStore } from '../../../edge/stores/rollouts/rollout-store.ts'
import { FakeMonitorSource, MINUTE, T0, canaryRollout, histogram, window, type WindowFor } from './support.ts'

const MODEL = 'credit-risk'

/** One model with a canary, one with a plain rollout and one with none, in memory stores. */
const setup = async (rollout: Rollout, windowFor?: WindowFor) => {
  const history = new MemoryHistoryStore()
  const rollouts = new MemoryRolloutStore({ history })
  await rollouts.compareAndSet(MODEL, 0, rollout)
  await rollouts.compareAndSet('plain', 0, rolloutSchema.parse({ salt: 's', arms: [{ variant: 'stable', version: 1, weight: 100 }] }))
  const source = new FakeMonitorSource(windowFor)
  const notified: HistoryEntry[] = []
  const lines: string[] = []
  const clock = { now: T0 }
  const controller = (options: Partial<ControllerOptions> = {}) =>
    createController({
      rollouts,
      source,
      models: async () => [MODEL, 'plain', 'unknown'],
      now: () => clock.now,
      notify: (entry) => void notified.push(entry),
      log: (line) => void lines.push(line),
      ...options,
    })
  const stored = async () => (await rollouts.get(MODEL))!
  /** Ticks once at `minute` after T0. */
  const tickAt = async (minute: number, tick = controller().tick) => {
    clock.now = T0 + minute * MINUTE
    return tick()
  }
  return { rollouts, history, source, notified, lines, controller, stored, tickAt }
}

const summary = (o: TickOutcome) => ('decision' in o ? `${o.outcome} ${o.decision.action} ${o.decision.from_weight}→${o.decision.to_weight}` : `${o.outcome}`)

describe('controller tick', () => {
  it('steps a healthy canary 1 → 5 → 20 → 50 and promotes it, dwelling 10 minutes at each weight', async () => {
    const { stored, tickAt, controller, history, notified, source } = await setup(canaryRollout(1))
    const tick = controller().tick
    const moves: string[] = []
    for (let minute = 1; minute <= 60 && (await stored()).rollout.canary; minute++) {
      for (const o of await tickAt(minute, tick)) {
        expect(o.model).toBe(MODEL)
        if ('decision' in o && o.decision.action !== 'hold') moves.push(`minute ${minute}: ${summary(o)}`)
      }
    }
    expect(moves).toEqual(['minute 10: applied step 1→5', 'minute 20: applied step 5→20', 'minute 30: applied step 20→50', 'minute 40: applied promote 50→100'])
    expect((await stored()).rollout).toEqual({ salt: 'exp', arms: [{ variant: 'stable', version: 3, weight: 100 }], pinnable: [], layout: '0'.repeat(10_000) })
    // The window grows with the time at a weight: the step's first minute bucket through the current one, 2 to 11, four times over.
    const oneStep = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    expect(source.reads.filter((r) => r.version === 3).map((r) => r.minutes)).toEqual([...oneStep, ...oneStep, ...oneStep, ...oneStep])
    const entries = await history.list(MODEL, 100)
    // Holds are recorded when their reason changes: once per step, not once a minute.
    expect(entries.map((e) => `${e.action} ${e.reason}`)).toEqual([
      'promote healthy at 50% for 10 min: promoted',
      'hold dwelling at 50% for 10 min',
      'step healthy at 20% for 10 min',
      'hold dwelling at 20% for 10 min',
      'step healthy at 5% for 10 min',
      'hold dwelling at 5% for 10 min',
      'step healthy at 1% for 10 min',
      'hold dwelling at 1% for 10 min',
    ])
    expect(entries[0]).toMatchObject({ model: MODEL, actor: 'controller', variant: 'canary', from_weight: 50, to_weight: 100, time: new Date(T0 + 40 * MINUTE).toISOString() })
    expect(entries[0].numbers).toMatchObject({ window_minutes: 11, stable: { version: 2, rows: 5_000 }, canary: { version: 3 }, psi: 0, clean_streak: 3 })
    expect(notified).toEqual([...entries].reverse())
    expect(await tickAt(41, tick)).toEqual([])
  })

  it('rolls a canary that emits NaN back to 0 on the first tick', async () => {
    const { stored, tickAt, history, notified } = await setup(canaryRollout(20), (version) => window(version, { nan_outputs: version === 3 ? 2 : 0, rows: 40 }))
    expect((await tickAt(1)).map(summary)).toEqual(['applied rollback 20→0'])
    expect((await stored()).rollout).toMatchObject({ arms: [{ variant: 'stable', weight: 100 }, { variant: 'canary', weight: 0 }] })
    expect((await stored()).rollout.canary).toBeUndefined()
    const [entry] = await history.list(MODEL, 10)
    expect(entry).toMatchObject({ action: 'rollback', reason: 'canary produced 2 NaN/Inf outputs', numbers: { canary: { nan_outputs: 2 } } })
    expect(notified).toEqual([entry])
  })

  it('rolls back after 3 critical prediction-drift windows', async () => {
    const shifted: WindowFor = (version) => (version === 3 ? window(3, { prediction_counts: histogram(5_000, 2.5) }) : window(version))
    const { tickAt, stored } = await setup(canaryRollout(5), shifted)
    expect((await tickAt(1)).map(summary)).toEqual(['applied hold 5→5'])
    expect((await tickAt(2)).map(summary)).toEqual(['applied hold 5→5'])
    expect((await stored()).rollout.canary).toMatchObject({ critical_streak: 2 })
    expect((await tickAt(3)).map(summary)).toEqual(['applied rollback 5→0'])
  })

  it('does not roll back after 2 critical windows and a clean one', async () => {
    let shift = 2.5
    const { tickAt, stored, history } = await setup(canaryRollout(5), (version) => window(version, { prediction_counts: histogram(5_000, version === 3 ? shift : 0) }))
    await tickAt(1)
    await tickAt(2)
    shift = 0
    await tickAt(3)
    expect((await stored()).rollout.canary).toMatchObject({ critical_streak: 0 })
    shift = 2.5
    await tickAt(4)
    await tickAt(5)
    expect((await stored()).rollout.canary).toMatchObject({ critical_streak: 2 })
    expect((await stored()).rollout.arms[1].weight).toBe(5)
    expect((await history.list(MODEL, 10)).map((e) => e.reason)).toEqual([
      'prediction drift critical (2 of 3 windows)',
      'prediction drift critical (1 of 3 windows)',
      'dwelling at 5% for 10 min',
      'prediction drift critical (2 of 3 windows)',
      'prediction drift critical (1 of 3 windows)',
    ])
  })

  it('alerts on input drift in both arms once, leaving the weights alone', async () => {
    const drifted: WindowFor = (version) => window(version, { input_drift: version === 3 ? 'critical' : 'warning' })
    const { tickAt, stored, notified } = await setup(canaryRollout(5, { clean_streak: 3 }), drifted)
    expect((await tickAt(11)).map(summary)).toEqual(['applied alert 5→5'])
    expect((await tickAt(12)).map(summary)).toEqual(['unchanged alert 5→5'])
    expect((await stored()).rollout.arms).toEqual(canaryRollout(5).arms)
    expect(notified.map((e) => e.action)).toEqual(['alert'])
    expect(notified[0].reason).toContain('input drift on both arms')
  })

  it('lets one of two concurrent ticks step and the other find the state moved', async () => {
    const { controller, source, stored, history, tickAt } = await setup(canaryRollout(1, { clean_streak: 2 }))
    const [isolateA, isolateB] = [controller(), controller()]
    source.pause()
    const both = Promise.all([tickAt(10, isolateA.tick), isolateB.tick()])
    // Both have read revision 1 and asked for their windows before either decides.
    await vi.waitFor(() => expect(source.reads).toHaveLength(4))
    source.resume()
    const outcomes = (await both).flat().map(summary).sort()
    expect(outcomes).toEqual(['applied step 1→5', 'conflict step 1→5'])
    expect(await stored()).toMatchObject({ revision: 2, rollout: { arms: [{ weight: 95 }, { weight: 5 }] } })
    expect((await history.list(MODEL, 10)).map((e) => e.action)).toEqual(['step'])
  })

  it('goes on with the other models when one fails, and logs it', async () => {
    const { rollouts, tickAt, lines, controller } = await setup(canaryRollout(1, { clean_streak: 2 }))
    await rollouts.compareAndSet('broken', 0, canaryRollout(1))
    const source = new FakeMonitorSource((version, _minutes, model) => {
      if (model === 'broken') throw new Error('drift endpoint answered 503')
      return window(version)
    })
    const outcomes = await tickAt(10, controller({ source, models: async () => ['broken', MODEL] }).tick)
    expect(outcomes.map(summary)).toEqual(['failed', 'applied step 1→5'])
    expect(lines.map((l) => JSON.parse(l))).toContainEqual(expect.objectContaining({ level: 'error', model: 'broken', error: 'drift endpoint answered 503' }))
  })

  it('records and notifies a decision once when its write landed but the answer never came, by resending it with its id', async () => {
    const { rollouts, tickAt, stored, controller, history, notified } = await setup(canaryRollout(1, { clean_streak: 2 }))
    const sent: Array<string | undefined> = []
    // The first send is applied, then its answer is lost: what a timed-out Redis call looks like.
    const late: RolloutStore = {
      get: (model) => rollouts.get(model),
      async compareAndSet(model, expected, rollout, change) {
        sent.push(change?.id)
        const revision = await rollouts.compareAndSet(model, expected, rollout, change)
        if (sent.length === 1) throw new Error('no answer from Redis within 200 ms')
        return revision
      },
    }
    expect((await tickAt(10, controller({ rollouts: late }).tick)).map(summary)).toEqual(['applied step 1→5'])
    expect(sent).toHaveLength(2)
    expect(sent[1]).toBe(sent[0])
    expect((await stored()).revision).toBe(2)
    expect((await history.list(MODEL, 10)).map((e) => `${e.action} r${e.revision}`)).toEqual(['step r2'])
    expect(notified.map((e) => e.action)).toEqual(['step'])
  })

  it('gives up a decision after DECISION_SENDS sends without an answer, and a landed one is still recorded with its change', async () => {
    const { rollouts, tickAt, stored, controller, history, notified } = await setup(canaryRollout(1, { clean_streak: 2 }))
    let sends = 0
    const silent: RolloutStore = {
      get: (model) => rollouts.get(model),
      async compareAndSet(model, expected, rollout, change) {
        sends++
        await rollouts.compareAndSet(model, expected, rollout, change)
        throw new Error('no answer from Redis within 200 ms')
      },
    }
    expect((await tickAt(10, controller({ rollouts: silent }).tick)).map(summary)).toEqual(['failed'])
    expect(sends).toBe(DECISION_SENDS)
    expect((await stored()).revision).toBe(2)
    expect((await history.list(MODEL, 10)).map((e) => e.action)).toEqual(['step'])
    expect(notified).toEqual([])
  })

  it('leaves a paused canary as it is, reading nothing, and on resume continues the same step without counting the pause', async () => {
    const { rollouts, stored, tickAt, controller, source, history } = await setup(canaryRollout(1))
    const tick = controller().tick
    const set = async (next: Rollout | string) => {
      if (typeof next === 'string') throw new Error(next)
      await rollouts.compareAndSet(MODEL, (await stored()).revision, next)
    }
    for (let minute = 1; minute <= 5; minute++) await tickAt(minute, tick)
    const before = await stored()
    expect(before.rollout.canary).toMatchObject({ step_started_at: T0, clean_streak: 3 })
    await set(pausedRollout(before.rollout, T0 + 5 * MINUTE))
    const paused = await stored()
    const reads = source.reads.length
    const entries = (await history.list(MODEL, 100)).length
    // Thirty minutes paused: long past the step's 10 min dwell, and still nothing moves.
    for (let minute = 6; minute <= 35; minute++) expect((await tickAt(minute, tick)).map(summary)).toEqual(['paused'])
    expect(await stored()).toEqual(paused)
    expect(source.reads.length).toBe(reads)
    expect((await history.list(MODEL, 100)).length).toBe(entries)
    expect(pausedRollout(paused.rollout, T0 + 35 * MINUTE)).toBe('the canary is already paused')

    await set(resumedRollout(paused.rollout, T0 + 35 * MINUTE))
    const { paused_at: _pausedAt, ...kept } = paused.rollout.canary!
    expect((await stored()).rollout.canary).toEqual({ ...kept, step_started_at: T0 + 30 * MINUTE })
    expect(resumedRollout((await stored()).rollout, T0 + 36 * MINUTE)).toBe('the canary is not paused')
    // 5 minutes driven before the pause: the step's 10 min dwell ends 5 driven minutes after the resume.
    const moves: string[] = []
    for (let minute = 36; minute <= 40; minute++) {
      for (const o of await tickAt(minute, tick)) if ('decision' in o && o.decision.action !== 'hold') moves.push(`minute ${minute}: ${summary(o)}`)
    }
    expect(moves).toEqual(['minute 40: applied step 1→5'])
  })
})
