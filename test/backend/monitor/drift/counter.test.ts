import { beforeEach, describe, expect, it } from 'vitest'
import type { DriftCounter } from '../../../../backend/monitor/drift/counter.ts'
import { driftLayout } from '../../../../backend/monitor/drift/layout.ts'
import { MINUTE_MS, minuteOf } from '../../../../shared/drift/report.ts'
import { RETAINED_MINUTES } from '../../../../backend/monitor/drift/minute-buckets.ts'
import { DriftMonitor } from '../../../../backend/monitor/drift/monitor.ts'
import { createLogger, type Logger } from '../../../../backend/logger.ts'
import { modelConfig } from '../../../../backend/repository/model-config.ts'
import { baseline, config, request, row } from './fixture.ts'

const START = Date.UTC(2030, 0, 1, 12, 0, 10)
let now = START
let counter: DriftCounter
let faults: string[]

const logger: Logger = { ...createLogger('silent'), error: (msg) => faults.push(msg) }

/** Counts one request of rows with the given P(yes) each. */
const send = (rows: number[][], positives = rows.map(() => 0.1)) => {
  const { inputs, outputs } = request(rows, positives)
  counter.record(inputs, rows.length, outputs)
}

beforeEach(() => {
  now = START
  faults = []
  counter = new DriftMonitor({ logger, now: () => now }).counter(driftLayout('toy', 1, config, baseline))
})

describe('DriftCounter.record', () => {
  it('bins numeric values: NaN missing, below min, above max, and a value on an edge in the upper bin', async () => {
    // 0.35 arrives as FP32 (0.3499999940…): it is still on the edge, as in the baseline.
    send([0.35, NaN, 0.05, 0.1, 1.1, 2.19, 2.2, 9.9, 10, Infinity, -Infinity].map((s) => row(s, 0, 0)))
    const { features, rows } = await counter.window(1)
    // [missing, below_min, [..0.35), [0.35..1.1), [1.1..2.2), [2.2..], above_max]
    const { sums, ...binned } = features[0]
    expect(binned).toEqual({ name: 'score', kind: 'numeric', counts: [1, 2, 1, 1, 2, 2, 2] })
    expect(rows).toBe(11)
    // The 10 present values clamped to [0.1, 9.9], less 0.1: 0.25, 0, 0, 1, 2.09, 2.1 and 9.8 four times
    // (9.9, 10, ∞; -∞ is 0); each within half a grid step (9.8 / 4096) of its sums' share.
    const shifted = [0.25, 0, 0, 1, 2.09, 2.1, 9.8, 9.8, 9.8, 0]
    const step = 9.8 / 4096
    expect(sums).toMatchObject({ low: Math.fround(0.1), high: Math.fround(9.9) })
    expect(Math.abs(sums!.sum - shifted.reduce((a, b) => a + b))).toBeLessThan(10 * step)
    expect(Math.abs(sums!.sum_squares - shifted.reduce((a, b) => a + b * b, 0))).toBeLessThan(10 * 2 * 9.8 * step)
  })

  it('keeps the sums in whole grid steps, so Redis can add them (HINCRBY is integer-only)', async () => {
    send([0.123, 4.567, 8.9].map((s) => row(s, 0, 0)), [0.013, 0.5, 0.97])
    const { features, prediction } = await counter.window(1)
    const scale = counter.layout.features[0].scale
    expect(Number.isInteger(features[0].sums!.sum * scale) && Number.isInteger(features[0].sums!.sum_squares * scale * scale)).toBe(true)
    const logitScale = counter.layout.prediction.scale
    expect(Number.isInteger(prediction.logit_sums.sum * logitScale)).toBe(true)
  })

  it('counts categories in baseline order, with __other__, __unseen__ and missing', async () => {
    // red, green (folded away by the baseline), blue, violet (folded), unseen, no hot column, NaN
    const rows = [0, 1, 2, 3, 4, 4, undefined].map((c) => row(1, c, 1))
    rows.push([1, NaN, NaN, NaN, NaN, NaN, 1])
    send(rows)
    const { features } = await counter.window(1)
    // [missing, blue, red, __other__, __unseen__]
    expect(features[1]).toEqual({ name: 'color', kind: 'categorical', counts: [2, 1, 1, 2, 2] })
  })

  it('counts booleans as [missing, false, true]; a column neither 0 nor 1 is missing', async () => {
    send([0, 1, 1, 0.5, NaN].map((f) => row(1, 0, f)))
    expect((await counter.window(1)).features[2]).toEqual({ name: 'flag', kind: 'boolean', counts: [2, 1, 2] })
  })

  it('bins P(labels[1]), classes it by the threshold and counts NaN or infinite outputs apart', async () => {
    // 0.7 as FP32 is 0.69999998…, under the 0.7 threshold: "no", as the edge decides from the same value.
    const positives = [0.1, 0.25, 0.5, 0.6875, 0.7, 0.71875, 0.75, 1, NaN, Infinity]
    send(positives.map(() => row(1, 0, 0)), positives)
    const { prediction, rows } = await counter.window(1)
    const { logit_sums: sums, ...binned } = prediction
    expect(binned).toEqual({ counts: [1, 1, 4, 2], class_counts: [5, 3], nan_outputs: 2 })
    expect(rows).toBe(10)
    // The 8 finite scores' logits, clamped to ±10 (p = 1 is 10), less −10; within half a step (20 / 4096) each.
    const logits = positives.slice(0, 8).map((p) => Math.min(10, Math.log(Math.fround(p) / (1 - Math.fround(p)))) + 10)
    expect(sums).toMatchObject({ low: -10, high: 10 })
    expect(Math.abs(sums.sum - logits.reduce((a, b) => a + b))).toBeLessThan(8 * 10 / 4096)
    expect(logits[7]).toBe(20)
  })

  it('classes by argmax when the config sets no threshold, as the edge does', async () => {
    const argmax = modelConfig.parse({ ...config, postprocess: { output: 'p', labels: ['no', 'yes'] } })
    counter = new DriftMonitor({ logger, now: () => now }).counter(driftLayout('toy', 1, argmax, baseline))
    send([0.4, 0.5, 0.6].map(() => row(1, 0, 0)), [0.4, 0.5, 0.6])
    expect((await counter.window(1)).prediction.class_counts).toEqual([2, 1])
  })

  it('never throws into the request: a misshapen request is not counted and the fault is logged once', async () => {
    const { inputs } = request([row(1, 0, 0)], [0.1])
    expect(() => counter.record(inputs, 1, {})).not.toThrow()
    expect(() => counter.record(inputs, 5, request([row(1, 0, 0)], [0.1]).outputs)).not.toThrow()
    expect(faults).toEqual(['drift counting failed; the request was answered'])
    expect((await counter.window(1)).rows).toBe(0)
  })
})

describe('DriftCounter.request', () => {
  it('counts requests, backend errors, rows and latency per request', async () => {
    counter.request(100, 3, false)
    counter.request(5_000, 1, false)
    counter.request(70_000, 0, true)
    const { health } = await counter.window(1)
    expect(health).toMatchObject({ requests: 3, errors: 1, rows: 4 })
    expect(health.latency_counts.reduce((a, b) => a + b, 0)).toBe(3)
    expect(health.latency_counts[2]).toBe(1) // [91, 128) µs
  })
})

describe('minute buckets and windows', () => {
  it('counts into the minute of the clock and sums a window of the current and earlier minutes', async () => {
    send([row(1, 0, 0)])
    now += MINUTE_MS
    send([row(1, 0, 0), row(1, 0, 0)])
    now += 2 * MINUTE_MS
    send([row(1, 0, 0), row(1, 0, 0), row(1, 0, 0), row(1, 0, 0)])
    const minute = minuteOf(now)
    expect(await counter.window(1)).toMatchObject({ from_minute: minute, to_minute: minute, rows: 4 })
    expect(await counter.window(2)).toMatchObject({ from_minute: minute - 1, rows: 4 })
    expect(await counter.window(3)).toMatchObject({ from_minute: minute - 2, rows: 6 })
    expect((await counter.window(4)).rows).toBe(7)
    // A window in the past, read at a given time.
    expect((await counter.window(1, START)).rows).toBe(1)
  })

  it(`keeps ${RETAINED_MINUTES} minutes: a ring slot is reused, emptied, for the minute that replaces it`, async () => {
    send([row(1, 0, 0)])
    now += (RETAINED_MINUTES - 1) * MINUTE_MS
    send([row(1, 0, 0), row(1, 0, 0)])
    expect((await counter.window(RETAINED_MINUTES)).rows).toBe(3)
    now += MINUTE_MS
    send([row(1, 0, 0), row(1, 0, 0), row(1, 0, 0), row(1, 0, 0)])
    expect((await counter.window(RETAINED_MINUTES)).rows).toBe(6)
  })

  it('counts into the newest minute when the clock steps back', async () => {
    now += MINUTE_MS
    send([row(1, 0, 0)])
    now -= MINUTE_MS
    send([row(1, 0, 0)])
    expect((await counter.window(1, START + MINUTE_MS)).rows).toBe(2)
    expect((await counter.window(1, START)).rows).toBe(0)
  })

  it('refuses a window that is not 1 to 180 whole minutes', async () => {
    for (const minutes of [0, 181, 1.5]) await expect(counter.window(minutes)).rejects.toThrow(RangeError)
  })
})
