import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runCommand } from '../support/cli.ts'
import { capacityChart, niceStep } from '../../../load/capacity/chart.ts'
import { runOpenLoop } from '../../../load/capacity/open-loop.ts'
import { errorRate } from '../../../load/harness/outcomes.ts'
import { closeSvgParser, parseSvg } from '../support/svg.ts'

const RUN_TIMEOUT_MS = 180_000

afterAll(async () => {
  await closeSvgParser()
})

const steps = [
  { rate: 100, p50Ms: 3, p95Ms: 6, p99Ms: 9, errorRate: 0 },
  { rate: 400, p50Ms: 5, p95Ms: 30, p99Ms: 45, errorRate: 0 },
  { rate: 800, p50Ms: 190, p95Ms: 390, p99Ms: Number.POSITIVE_INFINITY, errorRate: 0.07 },
  { rate: 200, p50Ms: 4, p95Ms: 8, p99Ms: 12, errorRate: 0 },
  { rate: 600, p50Ms: 20, p95Ms: 90, p99Ms: 150, errorRate: 0.002 },
]

describe('capacity chart', () => {
  it('is well-formed SVG with the three percentiles, the error rate, the SLA line and the knee', async () => {
    const svg = capacityChart({ title: 'edge <local> & co', steps, slaP95Ms: 50, maxErrorRate: 0.001, capacityRate: 400, kneeRate: 600 })
    const parsed = await parseSvg(svg)
    expect(parsed.error).toBeNull()
    expect(parsed.root).toBe('svg')
    for (const series of ['series-p50', 'series-p95', 'series-p99']) expect(parsed.groups[series]).toMatchObject({ circles: steps.length, points: steps.length })
    expect(parsed.groups['series-error-rate'].points).toBe(steps.length)
    expect(parsed.groups.sla.text).toContain('SLA p95 < 50 ms')
    expect(parsed.groups.knee.text).toContain('capacity 400 req/s')
    expect(parsed.groups.knee.text).toContain('SLA broke at 600 req/s')
    expect(parsed.groups.legend.text).toMatch(/p50 latency.*p95 latency.*p99 latency.*error rate/s)
    expect(parsed.slaY).toBeGreaterThan(0)
  })

  it('draws points in rate order, whatever order the search ran them in', () => {
    const svg = capacityChart({ title: 't', steps, slaP95Ms: 50, maxErrorRate: 0.001 })
    const p50 = /<g id="series-p50"[^>]*><polyline points="([^"]+)"/.exec(svg)![1].split(' ').map((p) => Number(p.split(',')[0]))
    expect(p50).toEqual([...p50].sort((a, b) => a - b))
  })

  it('rounds axis steps to 1, 2 or 5 × 10^k', () => {
    expect([niceStep(1_000), niceStep(48), niceStep(0.004)]).toEqual([200, 10, 0.001])
  })
})

describe('open-model sender', () => {
  let server: Server | undefined
  afterAll(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())))

  it('sends on schedule whatever the answers, and counts arrivals past the in-flight cap as failures', async () => {
    // A server that answers every request only after 300 ms: a closed loop of 4 would send ~13.
    let received = 0
    server = createServer((req, res) => {
      received++
      req.resume()
      setTimeout(() => res.writeHead(200, { 'x-variant': 'stable' }).end('{}'), 300)
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const out = { body: '{}', headers: {}, kind: 'valid' as const, expectedStatus: 200 }
    const result = await runOpenLoop({ url, rate: 100, durationS: 1, maxInFlight: 20, timeoutMs: 5_000, next: () => out })
    expect(result.scheduled).toBe(100)
    // ~30 arrive while the first answers are pending: the first 20 are sent, the rest overflow.
    expect(result.outcomes.overflow).toBeGreaterThan(0)
    expect(received + result.outcomes.overflow).toBe(100)
    expect(result.outcomes.latenciesMs.length).toBe(received)
    // Latency runs to the answer, not the send: none is shorter than the server's hold (less a
    // millisecond: libuv fires timers against its cached loop clock, a little before a precise one).
    expect(Math.min(...result.outcomes.latenciesMs)).toBeGreaterThanOrEqual(299)
    expect(errorRate(result.outcomes)).toBeCloseTo(result.outcomes.overflow / 100)
  })
})

const capacity = (args: string[]) => runCommand('load/capacity/main.ts', args, RUN_TIMEOUT_MS)

describe('npm run load:capacity against the local stack', () => {
  it('measures the backend and the edge and writes the report with a chart each', async () => {
    const out = await mkdtemp(join(tmpdir(), 'capacity-'))
    try {
      // An SLA no step can break on a loaded machine: a broken step is run again at the same rate,
      // which would leave fewer distinct rates than steps.
      const run = await capacity(['--step-s', '1', '--start-rate', '20', '--max-steps', '3', '--sla-p95', '60000', '--max-error-rate', '0.5', '--out', out])
      expect(run.code, run.stderr).toBe(0)
      const files = (await readdir(out)).sort()
      expect(files).toHaveLength(3)
      const report = await readFile(join(out, files.find((f) => f.endsWith('.md'))!), 'utf8')
      expect(report).toMatch(/^## backend$/m)
      expect(report).toMatch(/^## edge$/m)
      expect(report).toMatch(/\| 1 \| step \| 20 \|/)
      expect(report).toMatch(/CPU µs\/req workerd/)
      for (const svg of files.filter((f) => f.endsWith('.svg'))) {
        expect(report).toContain(`](${svg})`)
        const parsed = await parseSvg(await readFile(join(out, svg), 'utf8'))
        expect(parsed.error).toBeNull()
        expect(parsed.groups['series-p95'].circles).toBe(3)
      }
    } finally {
      await rm(out, { recursive: true, force: true })
    }
  })

  it('exits 2 with one line naming the help on bad arguments', async () => {
    const run = await capacity(['--sla-p95', 'soon'])
    expect(run.code).toBe(2)
    expect(run.stderr).toBe('error: --sla-p95 must be a positive number, got "soon" (see edge-infer capacity --help)\n')
  })
})
