import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoApplicant as instance } from '../../../../dev/demo-applicant.ts'
import type { DriftReport } from '../../../../backend/monitor/drift/report.ts'
import { BackendMonitor } from '../../../../edge/rollout/backend-monitor.ts'
import { until } from '../../../backend/support/backend-process.ts'
import { edgeClient, type EdgeClient, replaceRollout } from '../../../support/client.ts'
import { startStack, type Stack } from '../../../support/stack.ts'
import { listen, metricSum as edgeMetricSum, untilHit as untilCached } from './support.ts'

/**
 * Rows answered from the edge prediction cache reach the backend's drift counter exactly once:
 * the bundled worker in workerd, the real backend counting drift into a real redis-server, and a
 * hop between them that forwards every call, counts infer rows and observations, and can apply an
 * observation and hold its answer (the edge's attempt times out and resends under the same id) or
 * refuse observations outright.
 */

const INFER_TOKEN = 'cache-drift-infer-token-0123456789'
/** An observation the backend applied whose answer the hop kept from the edge. */
const HELD = 0

interface Hop {
  url: string
  /** Rows of each infer call the backend got for version 2 (computed rows). */
  computed: number[]
  /** Every observation the backend got, resends included, in order, with the status the edge was answered (`HELD`: none). */
  observations: Array<{ id: string; rows: number; status?: number }>
  /** The next observation is applied by the backend, then its answer is held until its resend arrives. */
  holdNext: boolean
  /** Observations are answered 503 without reaching the backend. */
  refuse: boolean
  close(): Promise<unknown>
}

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })

const startHop = async (backendUrl: string): Promise<Hop> => {
  const held = new Map<string, ServerResponse>()
  const hop: Omit<Hop, 'url' | 'close'> = { computed: [], observations: [], holdNext: false, refuse: false }
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req)
      const observe = /\/versions\/2\/observe$/.test(req.url ?? '')
      const parsed = body.length ? (JSON.parse(body.toString()) as { id?: string; inputs: Array<{ shape: number[] }> }) : undefined
      if (/\/versions\/2\/infer$/.test(req.url ?? '') && parsed) hop.computed.push(parsed.inputs[0]!.shape[0]!)
      const seen: Hop['observations'][number] | undefined = observe && parsed ? { id: parsed.id ?? '', rows: parsed.inputs[0]!.shape[0]! } : undefined
      if (seen) hop.observations.push(seen)
      if (seen && hop.refuse) {
        seen.status = 503
        res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'refused by the test hop' }))
        return
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter((e): e is [string, string] => typeof e[1] === 'string' && e[0] !== 'host' && e[0] !== 'content-length'))
      const answer = await fetch(backendUrl + req.url, { method: req.method, headers, body: body.length ? body : null, signal: AbortSignal.timeout(10_000) })
      const text = Buffer.from(await answer.arrayBuffer())
      if (seen && hop.holdNext) {
        // Applied by the backend; the edge never hears so, and resends.
        hop.holdNext = false
        seen.status = HELD
        held.set(seen.id, res)
        return
      }
      if (seen) seen.status = answer.status
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(text)
      if (seen) held.get(seen.id)?.destroy()
    })().catch(() => res.writeHead(502).end())
  })
  return Object.assign(hop, await listen(server))
}

let stack: Stack
let hop: Hop
let app: EdgeClient
let ops: EdgeClient
let seq = 0

/** A fresh applicant no other test sends. */
const fresh = () => instance(5_000 + seq++)

const report = async (): Promise<DriftReport> => {
  const res = await fetch(`${stack.backend.url}/v2/models/credit-risk/versions/2/drift?window=15m`, { headers: { authorization: `Bearer ${INFER_TOKEN}` } })
  expect(res.status).toBe(200)
  return (await res.json()) as DriftReport
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
/** Rows of every distinct observation id the backend answered 200. */
const observedRows = () => sum([...new Map(hop.observations.filter((o) => o.status === 200).map((o) => [o.id, o.rows])).values()])
/** Rows the backend was sent to compute and rows observed: what its drift counter must hold. */
const expectedRows = () => sum(hop.computed) + observedRows()

const metricSum = (prefix: string) => edgeMetricSum(ops, prefix)
const HITS = 'edge_infer_edge_cache_hits_total'
const FAILURES = 'edge_infer_edge_cache_observe_failures_total'

/**
 * Waits until every row the edge answered from its cache (its hits counter) has been observed
 * by the backend or counted as an observe failure, and no observation is in flight at the hop.
 */
const quiesce = () =>
  until(async () => hop.observations.every((o) => o.status !== undefined) && observedRows() + (await metricSum(FAILURES)) === (await metricSum(HITS)), { tries: 400 })

const untilHit = (...call: Parameters<EdgeClient['predict']>) => untilCached(app, ...call)

/** Caches `rows`, waits until every cached row so far is observed, and says where the counts stand. */
const cachedAndCounted = async (rows: Array<ReturnType<typeof fresh>>) => {
  await untilHit(rows, { entity: { user_id: 'u-1' } })
  await quiesce()
  return { before: await report(), failuresBefore: await metricSum(FAILURES), sentBefore: hop.observations.length }
}

beforeAll(async () => {
  stack = await startStack({
    redis: { token: 'cache-drift-redis-token-0123456789', worker: false },
    backend: { INFER_TOKEN },
    keys: [
      { name: 'app', tenant: 'acme', scopes: ['predict'], rate_limit_per_minute: 1_000_000 },
      { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 1_000_000 },
    ],
    between: async (backendUrl) => (hop = await startHop(backendUrl)),
    worker: { INFER_TOKEN },
  })
  app = edgeClient(stack.worker.url, { key: stack.keys.app! })
  ops = edgeClient(stack.worker.url, { key: stack.keys.ops! })
  const res = await replaceRollout(ops, { salt: 'cache-drift', arms: [{ variant: 'stable', version: 2, weight: 100 }], cache: { ttl_seconds: 300 } })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
})

afterAll(async () => {
  await stack?.stop()
})

describe('cached rows in the backend drift report, in workerd', () => {
  it('counts every served row once: cached hits and a partly cached batch, none of them as backend requests', async () => {
    const [a, b, c] = [fresh(), fresh(), fresh()]
    await untilHit([a, b], { entity: { user_id: 'u-1' } })
    await quiesce()
    const before = await report()
    expect(before.rows).toBe(expectedRows())
    const computedBefore = sum(hop.computed)
    const observedBefore = observedRows()

    // Five wholly cached requests of two rows, and one batch with one cached row and one computed.
    for (let i = 0; i < 5; i++) expect((await app.predict([a, b], { entity: { user_id: 'u-1' } })).headers.get('x-cache')).toBe('HIT')
    const mixed = await app.predict([a, c], { entity: { user_id: 'u-1' } })
    expect(mixed.headers.get('x-cache')).toBe('MISS')
    await quiesce()
    const after = await report()
    expect(sum(hop.computed)).toBe(computedBefore + 1)
    expect(observedRows() - observedBefore).toBe(5 * 2 + 1)
    expect(after.rows - before.rows).toBe(5 * 2 + 1 + 1)
    expect(after.rows).toBe(expectedRows())
    // Observed rows are no backend requests: request health counts only the one computed call.
    expect(after.health.requests - before.health.requests).toBe(1)
    expect(sum(after.prediction.counts) - sum(before.prediction.counts)).toBe(12)

    // The canary controller's arm: the histogram of every served row, but the minimum-rows gate,
    // like requests, errors and p95, counts what the backend computed.
    const arm = await new BackendMonitor({ baseUrl: stack.backend.url, token: INFER_TOKEN }).arm('credit-risk', 2, 15)
    expect(arm.prediction_counts).toEqual(after.prediction.counts)
    expect(arm.rows).toBe(sum(hop.computed))
    expect(arm.rows).toBeLessThan(after.rows)
    expect(arm.requests).toBe(after.health.requests)
  })

  it('resends an observation whose answer was held, under the same id, and the backend counts it once', async () => {
    const rows = [fresh(), fresh(), fresh()]
    const { before, failuresBefore, sentBefore } = await cachedAndCounted(rows)

    hop.holdNext = true
    expect((await app.predict(rows, { entity: { user_id: 'u-1' } })).headers.get('x-cache')).toBe('HIT')
    // The held attempt times out at the edge (2 s) and the same observation comes again.
    await until(() => hop.observations.length >= sentBefore + 2 && hop.observations[sentBefore + 1]!.status !== undefined, { tries: 400 })
    const [first, resend] = hop.observations.slice(sentBefore)
    expect(resend!.id).toBe(first!.id)
    expect(resend!.status).toBe(200)
    expect(first!.status).toBe(HELD)
    await quiesce()

    const after = await report()
    expect(after.rows - before.rows).toBe(3)
    expect(after.rows).toBe(expectedRows())
    expect(await metricSum(FAILURES)).toBe(failuresBefore)
  })

  it('counts rows the backend never confirmed after the bounded resends as observe failures, not in drift', async () => {
    const rows = [fresh(), fresh()]
    const { before, failuresBefore, sentBefore } = await cachedAndCounted(rows)

    hop.refuse = true
    try {
      expect((await app.predict(rows, { entity: { user_id: 'u-1' } })).headers.get('x-cache')).toBe('HIT')
      await until(async () => (await metricSum(FAILURES)) === failuresBefore + 2, { tries: 200 })
    } finally {
      hop.refuse = false
    }
    // Three attempts in all, one id.
    const attempts = hop.observations.slice(sentBefore)
    expect(attempts.map((o) => o.status)).toEqual([503, 503, 503])
    expect(new Set(attempts.map((o) => o.id)).size).toBe(1)
    expect((await report()).rows).toBe(before.rows)
  })
})
