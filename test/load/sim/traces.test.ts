import { describe, expect, it } from 'vitest'
import { UsageError } from '../../../load/harness/args.ts'
import { clock, simulate } from '../../../load/sim/main.ts'
import { centredStartHour, generateTrace, HOLDOUT, holdoutTrace, peakHourTrace, peakRate, spikeCount, type Trace } from '../../../load/sim/trace.ts'

const rates = (trace: Trace): Float64Array => {
  if (trace.kind !== 'rates') throw new Error('expected a rate trace')
  return trace.ratesPerSecond
}
const min = (r: Float64Array) => r.reduce((a, b) => Math.min(a, b), Infinity)

describe('the generated windows the report compares', () => {
  it('a window on the morning ramp has a shape; the hour at the peak is flat', () => {
    const ramp = rates(generateTrace({ durationS: 2 * 3600, peakRps: 60_000, seed: 1, startHour: 6, spikesPerDay: 0 }))
    // The cosine from 06:00 to 08:00 climbs from 36 % to 57.5 % of the day's peak (trough 15 % at 02:00).
    expect(min(ramp) / peakRate({ kind: 'rates', ratesPerSecond: ramp })).toBeCloseTo(0.3625 / 0.575, 3)
    expect(ramp[0]).toBe(min(ramp))
    const peak = rates(peakHourTrace(60_000, 1))
    expect(peak).toHaveLength(3600)
    expect(spikeCount(3600)).toBe(0)
    expect(min(peak) / peakRate({ kind: 'rates', ratesPerSecond: peak })).toBeGreaterThan(0.99)
    expect(centredStartHour(3600)).toBe(13.5)
  })

  it('the held-out trace covers the same hours with its own seed and 48 spikes a day, at the same peak', () => {
    const durationS = 2 * 3600
    const committed = rates(generateTrace({ durationS, peakRps: 60_000, seed: 1, startHour: 6 }))
    const holdout = rates(holdoutTrace(durationS, 60_000, 1, 6))
    expect(holdout).toHaveLength(durationS)
    expect(peakRate({ kind: 'rates', ratesPerSecond: holdout })).toBeCloseTo(60_000, 6)
    expect(holdout).toEqual(rates(generateTrace({ durationS, peakRps: 60_000, seed: 1 + HOLDOUT.seedOffset, startHour: 6, spikesPerDay: HOLDOUT.spikesPerDay })))
    expect(holdout).not.toEqual(committed)
    expect(spikeCount(durationS, HOLDOUT.spikesPerDay)).toBe(4)
    // Spikes lift whole seconds by 50–100 %: the held-out trace has more seconds that jump against the one before.
    const jumps = (r: Float64Array) => r.filter((x, i) => i > 0 && x / r[i - 1] > 1.4).length
    expect(jumps(holdout)).toBeGreaterThan(jumps(committed))
  })

  it('--start is an hour of the day, checked before anything runs', () => {
    for (const start of ['24', '-1', 'morning', '']) expect(() => simulate({ start }, 'test'), start).toThrow(UsageError)
    expect(clock(6)).toBe('06:00')
    expect(clock(13.5)).toBe('13:30')
  })
})
