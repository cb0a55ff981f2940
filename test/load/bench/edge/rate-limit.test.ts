import { describe, expect, it } from 'vitest'
import { formatRateLimits, type RateLimitRow } from '../../../../load/bench/edge/rate-limit.ts'

const row = (mode: RateLimitRow['mode'], figures: Partial<RateLimitRow>): RateLimitRow => ({
  mode, reqPerSec: 100, runs: [100], p50Ms: 10, p99Ms: 20, cpuUs: 1_000, roundTrips: 1, scriptCalls: 1, ...figures,
})

describe('the rate-limit rows of bench:edge', () => {
  it('prints each mode with its Redis round trips and the binding ÷ exact ratios', () => {
    const text = formatRateLimits({
      settings: { rounds: 3, durationS: 5, warmupS: 2, connections: 4 },
      rows: [row('exact (Redis)', { reqPerSec: 200, cpuUs: 1_600, p50Ms: 20, roundTrips: 1.04, scriptCalls: 1.01 }), row('binding', { reqPerSec: 150, cpuUs: 2_000, p50Ms: 25, roundTrips: 0.03, scriptCalls: 0 })],
      loadBefore: '1.00 1.00 1.00',
      loadAfter: '2.00 2.00 2.00',
    })
    const lines = text.split('\n')
    expect(lines.find((line) => line.startsWith('exact (Redis)'))).toMatch(/^exact \(Redis\)\s+200\s+.*\s1600\s+1\.04\s+1\.01$/)
    expect(lines.find((line) => line.startsWith('binding '))).toMatch(/\s2000\s+0\.03\s+0\.00$/)
    // req/s 150 ÷ 200, p50 25 ÷ 20, p99 20 ÷ 20, CPU 2000 ÷ 1600.
    expect(lines.find((line) => line.startsWith('binding ÷ exact'))?.split(/\s{2,}/)).toEqual(['binding ÷ exact', '0.75', '1.25', '1.00', '1.25'])
    expect(text).toContain('before 1.00 1.00 1.00, after 2.00 2.00 2.00')
  })
})
