import { describe, expect, it } from 'vitest'
import { findCapacity, holds, type Probe } from '../../../load/capacity/search.ts'

/**
 * A deterministic latency curve of a single-server queue: p95 = base / (1 − ρ) with ρ = rate /
 * service rate, and failures once the queue overflows. The SLA p95 < S breaks at
 * rate* = μ · (1 − base / S), known in closed form.
 */
const queue = ({ base, mu }: { base: number; mu: number }) => async (rate: number): Promise<Probe> => {
  const rho = rate / mu
  return { rate, p95Ms: rho < 1 ? base / (1 - rho) : Number.POSITIVE_INFINITY, errorRate: rho < 1 ? 0 : 0.2 }
}

describe('capacity search', () => {
  const sla = { p95Ms: 50, maxErrorRate: 0.001 }

  it.each([
    { base: 5, mu: 1_000, start: 50 },
    { base: 10, mu: 3_700, start: 100 },
    { base: 2, mu: 180, start: 10 },
  ])('finds the knee of base $base ms, μ $mu/s within the tolerance', async ({ base, mu, start }) => {
    const knee = mu * (1 - base / sla.p95Ms)
    const tolerance = 0.05
    const result = await findCapacity({ sla, probe: queue({ base, mu }), startRate: start, growth: 2, tolerance, maxSteps: 20, maxRate: 100_000 })
    expect(result.ended).toBe('converged')
    expect(result.capacity!.rate).toBeLessThan(knee)
    expect(result.capacity!.rate).toBeGreaterThanOrEqual(knee * (1 - tolerance) - 1)
    expect(result.knee!.rate).toBeGreaterThanOrEqual(knee)
    expect(holds(sla, result.capacity!)).toBe(true)
    expect(holds(sla, result.knee!)).toBe(false)
    // Stepping up doubles until the first break, then every step is a bisection.
    const phases = result.steps.map((s) => s.phase)
    expect(phases.indexOf('bisect')).toBe(result.steps.findIndex((s) => !holds(sla, s)) + 1)
  })

  it('counts errors as a break even with fast answers', async () => {
    const probe = async (rate: number): Promise<Probe> => ({ rate, p95Ms: 1, errorRate: rate > 300 ? 0.01 : 0 })
    const result = await findCapacity({ sla, probe, startRate: 100, growth: 2, tolerance: 0.02, maxSteps: 20, maxRate: 10_000 })
    expect(result.capacity!.rate).toBeLessThanOrEqual(300)
    expect(result.capacity!.rate).toBeGreaterThanOrEqual(294)
  })

  it('stops at the cap on steps and on the rate, and when the first rate already breaks', async () => {
    const fast = async (rate: number): Promise<Probe> => ({ rate, p95Ms: 1, errorRate: 0 })
    const capped = await findCapacity({ sla, probe: fast, startRate: 10, growth: 2, tolerance: 0.05, maxSteps: 4, maxRate: 10_000 })
    expect(capped).toMatchObject({ ended: 'max-steps', knee: undefined })
    expect(capped.steps.map((s) => s.rate)).toEqual([10, 20, 40, 80])
    const ceiling = await findCapacity({ sla, probe: fast, startRate: 10, growth: 2, tolerance: 0.05, maxSteps: 20, maxRate: 50 })
    expect(ceiling.ended).toBe('max-rate')
    expect(ceiling.capacity!.rate).toBe(50)
    const slow = async (rate: number): Promise<Probe> => ({ rate, p95Ms: 500, errorRate: 0 })
    expect(await findCapacity({ sla, probe: slow, startRate: 10, growth: 2, tolerance: 0.05, maxSteps: 20, maxRate: 50 })).toMatchObject({ ended: 'broke-at-start', capacity: undefined })
  })
})

describe('capacity search on shared cores', () => {
  it('runs a broken step once more and keeps the better run, so one stall does not end the search', async () => {
    const sla = { p95Ms: 50, maxErrorRate: 0.001 }
    let calls = 0
    // The third run stalls (a neighbour's burst); the curve itself holds up to 1,000 req/s.
    const probe = async (rate: number): Promise<Probe> => ({ rate, p95Ms: ++calls === 3 || rate > 1_000 ? 400 : 5, errorRate: 0 })
    const result = await findCapacity({ sla, probe, startRate: 100, growth: 2, tolerance: 0.05, maxSteps: 30, maxRate: 100_000, confirmBreaks: true })
    expect(result.steps.slice(0, 4).map((s) => [s.rate, s.phase])).toEqual([[100, 'step'], [200, 'step'], [400, 'step'], [400, 'confirm']])
    expect(result.capacity!.rate).toBeGreaterThanOrEqual(950)
    expect(result.capacity!.rate).toBeLessThanOrEqual(1_000)
    // Without confirmation the same stall would have ended the climb at 400.
    calls = 0
    const unconfirmed = await findCapacity({ sla, probe, startRate: 100, growth: 2, tolerance: 0.05, maxSteps: 30, maxRate: 100_000 })
    expect(unconfirmed.knee!.rate).toBe(400)
  })
})
