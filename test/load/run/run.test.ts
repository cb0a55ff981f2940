import { describe, expect, it } from 'vitest'
import { runCommand } from '../support/cli.ts'
import { SCENARIOS, scaled, totalDurationS } from '../../../load/scenarios/index.js'
import { UsageError } from '../../../load/harness/args.ts'
import { loadArgs } from '../../../load/run/args.ts'
import { slicesOf } from '../../../load/run/autocannon-run.ts'
import { emptyOutcomes, errorRate, recordAnswer } from '../../../load/harness/outcomes.ts'

const RUN_TIMEOUT_MS = 120_000

const load = (args: string[]) => runCommand('load/run/main.ts', args, RUN_TIMEOUT_MS)

describe('npm run load: arguments', () => {
  it('scale the scenario and keep its SLA unless overridden', () => {
    const args = loadArgs({ scenario: 'spike', duration: '8.5', rate: '40', slaP95: '70' })
    expect(totalDurationS(args.scenario)).toBeCloseTo(8.5)
    expect(args.scenario.peakRate).toBe(40)
    expect(args.scenario.sla).toEqual({ ...SCENARIOS.spike.sla, p95Ms: 70 })
    expect(args.target).toEqual({ kind: 'local' })
    expect(loadArgs({ target: 'https://edge.example/', key: 'k' })).toMatchObject({ target: { kind: 'remote', url: 'https://edge.example', apiKey: 'k' } })
  })

  // Unknown flags are refused by the command line itself: test/tools/cli/cli.test.ts.
  it.each([
    [{ scenario: 'nope' }], [{ rate: 'fast' }], [{ duration: '0' }], [{ connections: '2.5' }], [{ key: 'k' }],
    [{ target: 'ftp://x', key: 'k' }], [{ target: 'http://127.0.0.1:1' }],
  ])('refuse %j', (flags) => {
    const saved = process.env.API_KEY
    delete process.env.API_KEY
    try {
      expect(() => loadArgs(flags)).toThrow(UsageError)
    } finally {
      if (saved !== undefined) process.env.API_KEY = saved
    }
  })
})

describe('npm run load: slices and outcomes', () => {
  it('plays a shape as constant-rate slices covering it, flat stretches merged', () => {
    const spike = scaled(SCENARIOS.spike, { durationS: 17, peakRate: 100 })
    const slices = slicesOf(spike)
    expect(slices.reduce((s, x) => s + x.durationS, 0)).toBeCloseTo(17)
    expect(Math.max(...slices.map((s) => s.rate))).toBe(100)
    expect(slices[0]).toEqual({ durationS: 5, rate: 20 })
    expect(slicesOf(SCENARIOS.steady)).toEqual([{ durationS: 30, rate: 100 }])
  })

  it('count a refusal the input asked for apart from failures, and any other status as one', () => {
    const o = emptyOutcomes()
    recordAnswer(o, { status: 200, latencyMs: 3, variant: 'stable', kind: 'valid', expectedStatus: 200 })
    recordAnswer(o, { status: 400, latencyMs: 1, variant: undefined, kind: 'refused', expectedStatus: 400 })
    expect(errorRate(o)).toBe(0)
    recordAnswer(o, { status: 200, latencyMs: 2, variant: 'stable', kind: 'refused', expectedStatus: 400 })
    recordAnswer(o, { status: 503, latencyMs: 2, variant: 'stable', kind: 'valid', expectedStatus: 200 })
    expect(o.expectedRefusals).toBe(1)
    expect(o.unexpected).toBe(2)
    expect(errorRate(o)).toBe(0.5)
    expect(o.byVariant.get('stable')).toEqual([3, 2])
  })
})

describe('npm run load against the local stack it starts', () => {
  it('exits 0 when the SLA holds, printing the summary and the variants', async () => {
    const run = await load(['--duration', '2', '--rate', '20', '--sla-p95', '5000', '--sla-p99', '10000', '--max-error-rate', '0.5'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^steady +\d+/m)
    expect(run.stdout).toMatch(/^stable +\d+/m)
    expect(run.stdout).toContain('SLA held.')
  })

  it('exits 1 when a threshold is crossed', async () => {
    const run = await load(['--duration', '2', '--rate', '20', '--sla-p95', '0.001'])
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toMatch(/SLA crossed: p95 [0-9.]+ ms ≥ 0.001 ms/)
  })

  it('exits 2 with one line naming the help on bad arguments', async () => {
    const run = await load(['--rate', 'fast'])
    expect(run.code).toBe(2)
    expect(run.stderr).toBe('error: --rate must be a positive number, got "fast" (see edge-infer load --help)\n')
  })
})
