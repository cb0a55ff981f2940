import { describe, expect, it } from 'vitest'
import { requestMetricsExposition } from '../../../../edge/exposition/requests.ts'
import { RequestMetrics, type SharedTally, type Tally } from '../../../../edge/stores/tallies/tally.ts'
import { samplesOf, total } from '../../pipeline/request-metrics/samples.ts'

/** A shared tally in memory that refuses while `down`, applying each write id once: Redis's part, without the network. */
class FlakyTally implements SharedTally {
  readonly sums: Tally = new Map()
  readonly ids: string[] = []
  readonly applied = new Set<string>()
  down = false
  batches = 0
  /** When set, the next write waits for this before it is applied and answered. */
  gate: Promise<void> | undefined

  async add(writeId: string, deltas: Tally): Promise<void> {
    this.batches++
    this.ids.push(writeId)
    const gate = this.gate
    this.gate = undefined
    if (gate) await gate
    if (this.down) throw new Error('redis down')
    if (this.applied.has(writeId)) return
    this.applied.add(writeId)
    for (const [name, delta] of deltas) this.sums.set(name, (this.sums.get(name) ?? 0) + delta)
  }

  async read(): Promise<Tally> {
    return new Map(this.sums)
  }
}

const ok = (seconds = 0.02) => ({ model: 'credit-risk', version: '2', variant: 'stable', code: 200, servedBy: 'backend' as const, seconds })

/** Lets every promise callback already due run. */
const settle = () => new Promise((resolve) => setImmediate(resolve))

/** A clock the test moves, and sleeps that resolve only when the test says. */
const manualTime = () => {
  let now = 1_000
  const sleeping: Array<{ ms: number; wake: () => void }> = []
  return {
    now: () => now,
    advance: (ms: number) => void (now += ms),
    sleep: (ms: number) => new Promise<void>((wake) => sleeping.push({ ms, wake })),
    sleeping,
  }
}

describe('RequestMetrics', () => {
  it('without Redis, its totals are what this isolate counted, and no flush is ever due', async () => {
    const metrics = new RequestMetrics()
    metrics.request(ok())
    metrics.request(ok())
    expect(metrics.flushDue()).toBeUndefined()
    const samples = samplesOf(requestMetricsExposition(await metrics.totals(), []))
    expect(total(samples, 'edge_infer_edge_requests_total')).toBe(2)
  })

  it('waits for the interval with one flush, then flushes at once once it is over or when many fields changed', async () => {
    const time = manualTime()
    const shared = new FlakyTally()
    const metrics = new RequestMetrics({ shared, flushEveryMs: 1_000, flushAtFields: 5, now: time.now, sleep: time.sleep, log: () => {} })
    metrics.request(ok())
    const waiting = metrics.flushDue()
    expect(waiting).toBeDefined()
    expect(time.sleeping.map((s) => s.ms)).toEqual([1_000])
    time.advance(400)
    metrics.request(ok())
    // The same interval: the waiting flush will take this request too.
    expect(metrics.flushDue()).toBeUndefined()
    time.advance(600)
    time.sleeping[0].wake()
    await waiting
    expect(shared.batches).toBe(1)
    expect(shared.sums.get('requests credit-risk 2 stable 200 backend')).toBe(2)

    // A dropped timer (never woken) does not hold counts back: the first request after the interval flushes.
    metrics.request(ok())
    expect(metrics.flushDue()).toBeDefined()
    time.advance(1_000)
    metrics.request(ok())
    await metrics.flushDue()
    expect(shared.batches).toBe(2)
    expect(shared.sums.get('requests credit-risk 2 stable 200 backend')).toBe(4)

    // Many changed fields: no waiting for the interval.
    for (let code = 400; code < 404; code++) metrics.request({ ...ok(), code })
    await metrics.flushDue()
    expect(shared.batches).toBe(3)
  })

  it('keeps what a failed flush carried for the next one, and a scrape flushes first', async () => {
    const shared = new FlakyTally()
    const lines: string[] = []
    const metrics = new RequestMetrics({ shared, log: (line) => lines.push(line) })
    shared.down = true
    metrics.request(ok())
    metrics.decision('credit-risk', 'rollback')
    await metrics.flush()
    expect(shared.sums.size).toBe(0)
    expect(lines).toHaveLength(1)
    await metrics.flush()
    // Logged once per outage, not once per flush.
    expect(lines).toHaveLength(1)
    shared.down = false
    metrics.request(ok())
    const totals = await metrics.totals()
    expect(totals.get('requests credit-risk 2 stable 200 backend')).toBe(2)
    expect(totals.get('decisions credit-risk rollback')).toBe(1)
    expect(totals.get('sum_us credit-risk 2 stable')).toBe(40_000)
  })

  it('resends a failed write whole with its id, and holds at most maxPendingFields beside it, dropping (and saying so) deltas of new fields beyond it', async () => {
    const shared = new FlakyTally()
    const lines: string[] = []
    const metrics = new RequestMetrics({ shared, maxPendingFields: 4, log: (line) => lines.push(line) })
    shared.down = true
    metrics.request(ok())
    await metrics.flush()
    // Beside the write in doubt (3 fields): 3 new fields, then 1 of the next 3, then only known ones.
    metrics.request({ ...ok(), variant: 'canary' })
    metrics.request({ ...ok(), variant: 'blue' })
    metrics.request({ ...ok(), variant: 'canary' })
    await metrics.flush()
    expect(JSON.parse(lines[1])).toMatchObject({ held_fields: 4, dropped_fields: 2 })
    shared.down = false
    await metrics.flush()
    // The write in doubt went out with its first id, then what was held, in the same flush.
    expect(shared.ids.slice(0, 3)).toEqual([shared.ids[0], shared.ids[0], shared.ids[0]])
    expect(shared.ids).toHaveLength(4)
    expect(shared.sums.get('requests credit-risk 2 stable 200 backend')).toBe(1)
    expect(shared.sums.get('requests credit-risk 2 canary 200 backend')).toBe(2)
    expect(shared.sums.get('requests credit-risk 2 blue 200 backend')).toBe(1)
    expect(shared.sums.size).toBe(7)
  })

  it('sends a count recorded while a write is in flight as soon as that write ends, with no further request', async () => {
    const time = manualTime()
    const shared = new FlakyTally()
    const metrics = new RequestMetrics({ shared, flushEveryMs: 100, now: time.now, sleep: time.sleep, log: () => {} })
    let answer = () => {}
    shared.gate = new Promise<void>((resolve) => (answer = resolve))
    metrics.request(ok())
    const first = metrics.flushDue()
    time.advance(100)
    time.sleeping[0].wake()
    await settle()
    expect(shared.batches).toBe(1)
    // The first write is in flight; the second count's interval ends while it still is.
    time.advance(50)
    metrics.request(ok())
    const second = metrics.flushDue()
    time.advance(50)
    time.sleeping[1].wake()
    await settle()
    answer()
    await Promise.all([first, second])
    expect(shared.batches).toBe(2)
    expect(shared.sums.get('requests credit-risk 2 stable 200 backend')).toBe(2)
    // And a count recorded after the interval while a write is in flight starts its own flush too.
    shared.gate = new Promise<void>((resolve) => (answer = resolve))
    metrics.request(ok())
    time.advance(100)
    const third = metrics.flush()
    metrics.request(ok())
    time.advance(100)
    const fourth = metrics.flushDue()
    expect(fourth).toBeDefined()
    answer()
    await Promise.all([third, fourth])
    expect(shared.sums.get('requests credit-risk 2 stable 200 backend')).toBe(4)
  })
})

describe('requestMetricsExposition', () => {
  it('makes the per-bucket counts cumulative, a bound inclusive, with +Inf, _sum and _count', () => {
    const metrics = new RequestMetrics()
    for (const seconds of [0.001, 0.0011, 0.3, 11]) metrics.request(ok(seconds))
    return metrics.totals().then((tally) => {
      const text = requestMetricsExposition(tally, [{ model: 'credit-risk', version: 2, arm: 'stable', weight: 100 }])
      const series = 'model="credit-risk",version="2",variant="stable"'
      expect(text).toContain(`edge_infer_edge_request_duration_seconds_bucket{${series},le="0.001"} 1\n`)
      expect(text).toContain(`edge_infer_edge_request_duration_seconds_bucket{${series},le="0.0025"} 2\n`)
      expect(text).toContain(`edge_infer_edge_request_duration_seconds_bucket{${series},le="0.5"} 3\n`)
      expect(text).toContain(`edge_infer_edge_request_duration_seconds_bucket{${series},le="10"} 3\n`)
      expect(text).toContain(`edge_infer_edge_request_duration_seconds_bucket{${series},le="+Inf"} 4\n`)
      expect(text).toContain(`edge_infer_edge_request_duration_seconds_count{${series}} 4\n`)
      expect(text).toContain(`edge_infer_edge_request_duration_seconds_sum{${series}} 11.3021\n`)
      expect(text).toContain('edge_infer_rollout_weight_percent{model="credit-risk",version="2",arm="stable"} 100\n')
    })
  })

  it('leaves out fields it cannot read (written by hand into the hash)', () => {
    const text = requestMetricsExposition(new Map([['requests only-three parts', 5], ['junk', 1], ['bucket a 1 stable', 2]]), [])
    expect(samplesOf(text)).toEqual([])
  })
})
