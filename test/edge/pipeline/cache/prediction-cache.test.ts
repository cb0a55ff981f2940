import { readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Response as MiniflareResponse } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoApplicant as instance } from '../../../../dev/demo-applicant.ts'
import { DEFAULT_FEATURE_SEED } from '../../../../edge/stores/features/memory.ts'
import { type CachedRow, rowKey } from '../../../../edge/stores/prediction-cache/prediction-cache-store.ts'
import { CACHE_NAME, cacheUrl } from '../../../../edge/stores/prediction-cache/workers-cache.ts'
import { encodeInstance, featureSpec, specWidth } from '../../../../shared/feature-spec.ts'
import { startWorker, type RunningWorker } from '../../support/workerd.ts'
import { promtoolCheckMetrics } from '../request-metrics/promtool.ts'
import { edgeClient, type EdgeClient, type Schemas, replaceRollout } from '../../../support/client.ts'
import { startStack, type Stack } from '../../../support/stack.ts'
import { listen, metricSum as edgeMetricSum, untilHit as untilCached } from './support.ts'

/**
 * The edge prediction cache in the bundled worker in workerd, in front of the real backend, with
 * a counting hop between them: every inference call the backend gets is counted per version, and
 * the next call to a version can be made to fail.
 */

const MAX_ENTRIES = 8

interface Hop {
  url: string
  /** Inference calls per version, shadow copies included. */
  calls: Map<number, number>
  /** Rows of each inference call, in order. */
  rows: Array<{ version: number; rows: number }>
  /** The next inference call to this version is answered 500 without reaching the backend. */
  failNext: Set<number>
  close(): Promise<unknown>
}

const startCountingHop = async (backendUrl: string): Promise<Hop> => {
  const calls = new Map<number, number>()
  const rows: Hop['rows'] = []
  const failNext = new Set<number>()
  const server: Server = createServer((req, res) => {
    const version = Number(/\/versions\/(\d+)\/infer$/.exec(req.url ?? '')?.[1] ?? NaN)
    if (Number.isInteger(version)) {
      calls.set(version, (calls.get(version) ?? 0) + 1)
      if (failNext.delete(version)) {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'injected by the test hop' }))
        req.resume()
        return
      }
    }
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).filter((e): e is [string, string] => typeof e[1] === 'string' && e[0] !== 'host' && e[0] !== 'content-length'))
      const body = chunks.length ? Buffer.concat(chunks) : null
      if (Number.isInteger(version) && body) rows.push({ version, rows: (JSON.parse(body.toString()) as { inputs: Array<{ shape: number[] }> }).inputs[0]!.shape[0]! })
      fetch(backendUrl + req.url, { method: req.method, headers, body, signal: AbortSignal.timeout(10_000) })
        .then(async (answer) => {
          const text = Buffer.from(await answer.arrayBuffer())
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(text)
        })
        .catch(() => res.writeHead(502).end())
    })
  })
  return { ...(await listen(server)), calls, rows, failNext }
}

let stack: Stack
let hop: Hop
let app: EdgeClient
let ops: EdgeClient
let labeller: EdgeClient
let seq = 0

const callsTo = (version: number) => hop.calls.get(version) ?? 0
const total = () => [...hop.calls.values()].reduce((a, b) => a + b, 0)

const putRollout = async (rollout: Schemas['RolloutPut']) => {
  const res = await replaceRollout(ops, rollout)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
}

const CACHE = { ttl_seconds: 300 }

const untilHit = (...call: Parameters<EdgeClient['predict']>) => untilCached(app, ...call)

/** A fresh applicant no other test sends. */
const fresh = () => instance(1_000 + seq++)

const metricSum = (prefix: string) => edgeMetricSum(ops, prefix)

beforeAll(async () => {
  stack = await startStack({
    keys: [
      { name: 'app', tenant: 'acme', scopes: ['predict'], rate_limit_per_minute: 1_000_000 },
      { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 1_000_000 },
      { name: 'labeller', tenant: 'acme', scopes: ['feedback'], rate_limit_per_minute: 1_000_000 },
    ],
    between: async (backendUrl) => (hop = await startCountingHop(backendUrl)),
    worker: { FEEDBACK_MODELS: 'credit-risk', PREDICTION_CACHE_MAX_ENTRIES: String(MAX_ENTRIES) },
  })
  app = edgeClient(stack.worker.url, { key: stack.keys.app! })
  ops = edgeClient(stack.worker.url, { key: stack.keys.ops! })
  labeller = edgeClient(stack.worker.url, { key: stack.keys.labeller! })
})

afterAll(async () => {
  await stack?.stop()
})

describe('the edge prediction cache, in workerd', () => {
  it('is off without a cache block: no X-Cache, every request reaches the backend', async () => {
    await putRollout({ salt: 'off', arms: [{ variant: 'stable', version: 2, weight: 100 }] })
    const row = fresh()
    const before = callsTo(2)
    for (let i = 0; i < 3; i++) {
      const res = await app.predict([row], { entity: { user_id: 'u-1' } })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-cache')).toBeNull()
    }
    expect(callsTo(2) - before).toBe(3)
  })

  it('answers a repeated row from the cache without a backend call; a changed feature or entity feature is a miss', async () => {
    await putRollout({ salt: 'hits', arms: [{ variant: 'stable', version: 2, weight: 100 }], pinnable: [1], cache: CACHE })
    const row = fresh()
    const first = await app.predict([row], { entity: { user_id: 'u-1' } })
    expect(first.headers.get('x-cache')).toBe('MISS')
    expect(first.headers.get('x-served-by')).toBe('backend')
    const hit = await untilHit([row], { entity: { user_id: 'u-1' } })
    const before = total()
    const again = await app.predict([row], { entity: { user_id: 'u-1' } })
    expect(again.headers.get('x-cache')).toBe('HIT')
    expect(total()).toBe(before)
    expect(again.headers.get('x-served-by')).toBe('edge')
    expect(again.headers.get('x-model-version')).toBe('2')
    expect(again.body.predictions).toEqual(first.body.predictions)
    expect(hit.body.predictions).toEqual(first.body.predictions)
    expect(again.body.request_id).not.toBe(first.body.request_id)

    // A request feature the model sees changed: another row.
    const changed = await app.predict([{ ...row, income: Number(row.income) + 1 }], { entity: { user_id: 'u-1' } })
    expect(changed.headers.get('x-cache')).toBe('MISS')
    // The same request features for a user whose entity features differ (defaults for an unknown user).
    const otherEntity = await app.predict([row], { entity: { user_id: 'nobody' } })
    expect(otherEntity.headers.get('x-cache')).toBe('MISS')
    expect(total()).toBe(before + 2)
  })

  it('sends only the rows not cached and merges them in order; answers a wholly cached batch in order', async () => {
    const [a, b, c] = [fresh(), fresh(), fresh()]
    const first = await untilHit([a, b], { entity: { user_id: 'u-1' } })
    const sentBefore = hop.rows.length
    const mixed = await app.predict([a, c, b], { entity: { user_id: 'u-1' } })
    expect(mixed.headers.get('x-cache')).toBe('MISS')
    expect(mixed.headers.get('x-served-by')).toBe('backend')
    expect(hop.rows.slice(sentBefore)).toEqual([{ version: 2, rows: 1 }])
    expect([mixed.body.predictions[0], mixed.body.predictions[2]]).toEqual(first.body.predictions)
    // The row that was sent is the one not cached: alone, it is now a hit with the same answer.
    expect((await untilHit([c], { entity: { user_id: 'u-1' } })).body.predictions).toEqual([mixed.body.predictions[1]])
    const all = await untilHit([b, c, a, b], { entity: { user_id: 'u-1' } })
    expect(all.body.predictions).toEqual([mixed.body.predictions[2], mixed.body.predictions[1], mixed.body.predictions[0], mixed.body.predictions[2]])
  })

  it('never caches an error: the next identical request goes to the backend', async () => {
    const row = fresh()
    hop.failNext.add(2)
    const failed = await app.predict([row], { entity: { user_id: 'u-1' } })
    expect(failed.status).toBeGreaterThanOrEqual(500)
    expect(failed.headers.get('x-cache')).toBe('MISS')
    const before = callsTo(2)
    const next = await app.predict([row], { entity: { user_id: 'u-1' } })
    expect(next.status).toBe(200)
    expect(next.headers.get('x-cache')).toBe('MISS')
    expect(callsTo(2)).toBe(before + 1)
  })

  it('honours Cache-Control: no-cache: a cached row is computed again, and a fresh one is not written', async () => {
    const row = fresh()
    await untilHit([row], { entity: { user_id: 'u-1' } })
    const before = callsTo(2)
    const bypass = await app.predict([row], { entity: { user_id: 'u-1' }, headers: { 'cache-control': 'no-cache' } })
    expect(bypass.headers.get('x-cache')).toBe('MISS')
    expect(bypass.headers.get('x-served-by')).toBe('backend')
    expect(callsTo(2)).toBe(before + 1)

    const unwritten = fresh()
    expect((await app.predict([unwritten], { entity: { user_id: 'u-1' }, headers: { 'cache-control': 'no-store, no-cache' } })).headers.get('x-cache')).toBe('MISS')
    // Another row's write landing first shows the background writes of the request before it are done.
    await untilHit([fresh()], { entity: { user_id: 'u-1' } })
    expect((await app.predict([unwritten], { entity: { user_id: 'u-1' } })).headers.get('x-cache')).toBe('MISS')
  })

  it('keys by the served version: a pin to the cached version hits, a pin to another version is that version\'s miss', async () => {
    const row = fresh()
    const routed = await untilHit([row], { entity: { user_id: 'u-1' } })
    const pinned = await app.predict([row], { entity: { user_id: 'u-1' }, version: 2 })
    expect(pinned.headers.get('x-cache')).toBe('HIT')
    expect(pinned.body.predictions).toEqual(routed.body.predictions)
    const before = callsTo(1)
    const other = await app.predict([row], { entity: { user_id: 'u-1' }, version: 1 })
    expect(other.headers.get('x-cache')).toBe('MISS')
    expect(other.body.version).toBe('1')
    expect(callsTo(1)).toBe(before + 1)
  })

  it('gives a canary\'s users the canary\'s cached answers and never serves them to stable\'s users', async () => {
    await putRollout({
      salt: 'canary-cache',
      arms: [{ variant: 'stable', version: 1, weight: 50 }, { variant: 'canary', version: 2, weight: 50 }],
      canary: { variant: 'canary', baseline_variant: 'stable' },
      cache: CACHE,
    })
    // Users the feature store does not know: the same entity features (defaults), so the same rows reach both arms.
    const keyed = (key: string) => ({ entity: { user_id: key } })
    const arms = new Map<string, string>()
    for (let i = 0; arms.size < 2 && i < 64; i++) {
      const res = await app.predict([instance(1)], keyed(`k-${i}`))
      arms.set(res.headers.get('x-variant')!, `k-${i}`)
    }
    const row = fresh()
    const canary = await untilHit([row], keyed(arms.get('canary')!))
    expect(canary.headers.get('x-variant')).toBe('canary')
    expect(canary.body.version).toBe('2')
    const before = callsTo(1)
    const stable = await app.predict([row], keyed(arms.get('stable')!))
    expect(stable.headers.get('x-cache')).toBe('MISS')
    expect(stable.body.version).toBe('1')
    expect(callsTo(1)).toBe(before + 1)
    const stableHit = await untilHit([row], keyed(arms.get('stable')!))
    expect(stableHit.body.version).toBe('1')
    expect(stableHit.body.predictions).toEqual(stable.body.predictions)
    // A canary's request that is not wholly cached sends every row: should the canary fail, stable answers them all.
    const sentBefore = hop.rows.length
    const mixed = await app.predict([row, fresh()], keyed(arms.get('canary')!))
    expect(mixed.headers.get('x-cache')).toBe('MISS')
    expect(hop.rows.slice(sentBefore)).toEqual([{ version: 2, rows: 2 }])
    expect(mixed.body.predictions[0]).toEqual(canary.body.predictions[0])
  })

  it('moves a user with a weight change mid-TTL: the new version\'s miss, never the old answer', async () => {
    await putRollout({ salt: 'move', arms: [{ variant: 'a', version: 1, weight: 100 }], cache: CACHE })
    const row = fresh()
    const old = await untilHit([row], { entity: { user_id: 'u-1' } })
    expect(old.body.version).toBe('1')
    await putRollout({ salt: 'move', arms: [{ variant: 'a', version: 1, weight: 0 }, { variant: 'b', version: 2, weight: 100 }], cache: CACHE })
    const before = callsTo(2)
    const moved = await app.predict([row], { entity: { user_id: 'u-1' } })
    expect(moved.headers.get('x-cache')).toBe('MISS')
    expect(moved.body.version).toBe('2')
    expect(moved.body.variant).toBe('b')
    expect(callsTo(2)).toBe(before + 1)
    expect(moved.body.predictions).not.toEqual(old.body.predictions)
  })

  it('still mirrors a cached answer to the shadow version', async () => {
    await putRollout({ salt: 'shadowed', arms: [{ variant: 'stable', version: 2, weight: 100 }], shadow: { version: 1, percent: 100 }, cache: CACHE })
    const row = fresh()
    await untilHit([row], { entity: { user_id: 'u-1' } })
    const before = { served: callsTo(2), shadow: callsTo(1) }
    expect((await app.predict([row], { entity: { user_id: 'u-1' } })).headers.get('x-cache')).toBe('HIT')
    // The shadow call runs after the response: waited for, boundedly.
    for (let i = 0; i < 40 && callsTo(1) === before.shadow; i++) await new Promise((resolve) => setTimeout(resolve, 25))
    expect(callsTo(1)).toBe(before.shadow + 1)
    expect(callsTo(2)).toBe(before.served)
  })

  it('keeps a cached answer\'s served record: its feedback is accepted', async () => {
    await putRollout({ salt: 'feedback', arms: [{ variant: 'stable', version: 2, weight: 100 }], cache: CACHE })
    const hit = await untilHit([fresh()], { entity: { user_id: 'u-1' } })
    let result: string | undefined
    for (let i = 0; i < 40; i++) {
      const res = await labeller.feedback({ request_id: hit.body.request_id, label: 'high_risk' })
      expect(res.status).toBe(200)
      result = res.body.results[0]?.result
      if (result !== 'unknown_or_expired') break
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(result).toBe('accepted')
    // The label of a cached answer counts in its version's window: the counts the canary controller's source reads (withEdgeCounts) and the quality route shows.
    const quality = await fetch(`${stack.worker.url}/v1/models/credit-risk/quality?window=15m`, { headers: { 'x-api-key': stack.keys.ops! } })
    expect(quality.status).toBe(200)
    const { versions } = (await quality.json()) as { versions: Array<{ version: number; realized: { labels: number } | null }> }
    expect(versions.find((v) => v.version === 2)?.realized?.labels).toBe(1)
  })

  it('counts hits and misses per model and version, and cached answers as requests the edge served', async () => {
    const hits = await metricSum('edge_infer_edge_cache_hits_total{model="credit-risk",version="2"}')
    const misses = await metricSum('edge_infer_edge_cache_misses_total{model="credit-risk",version="2"}')
    const edgeServed = await metricSum('edge_infer_edge_requests_total{model="credit-risk",version="2",variant="stable",status_class="2xx",code="200",served_by="edge"}')
    const row = fresh()
    await untilHit([row, fresh()], { entity: { user_id: 'u-1' } })
    expect(await metricSum('edge_infer_edge_cache_hits_total{model="credit-risk",version="2"}')).toBe(hits + 2)
    expect(await metricSum('edge_infer_edge_cache_misses_total{model="credit-risk",version="2"}')).toBeGreaterThanOrEqual(misses + 2)
    expect(await metricSum('edge_infer_edge_requests_total{model="credit-risk",version="2",variant="stable",status_class="2xx",code="200",served_by="edge"}')).toBe(edgeServed + 1)
    expect(await promtoolCheckMetrics((await ops.api.GET('/metrics', { parseAs: 'text' })).data!)).toEqual({ code: 0, findings: '' })
  })

  it('keeps rows in the colo\'s Cache API under the documented key, and answers rows found only there', async () => {
    await putRollout({ salt: 'colo', arms: [{ variant: 'stable', version: 2, weight: 100 }], cache: CACHE })
    const config = JSON.parse(await readFile(new URL('../../../../models/credit-risk/config.json', import.meta.url), 'utf8')) as { features: unknown }
    const spec = featureSpec.parse(config.features)
    /** The key of `row` for user u-1 on version 2: the row as enriched and encoded for the model. */
    const keyOf = async (row: ReturnType<typeof fresh>) => {
      const encoded = new Float32Array(specWidth(spec))
      encodeInstance(spec, { ...row, ...DEFAULT_FEATURE_SEED.user!['u-1'] }, encoded)
      return rowKey('credit-risk', 2, encoded)
    }
    const cache = await (await stack.worker.mf.getCaches()).open(CACHE_NAME)

    const written = fresh()
    const hit = await untilHit([written], { entity: { user_id: 'u-1' } })
    const entry = await cache.match(cacheUrl(await keyOf(written)))
    expect(entry?.status).toBe(200)
    expect(((await entry!.json()) as CachedRow).scores).toEqual(hit.body.predictions[0].scores)

    // A row this isolate never wrote (as another isolate of the colo would have): answered from the Cache API.
    const planted = fresh()
    const row: CachedRow = { scores: { low_risk: 0.25, high_risk: 0.75 }, at: Date.now() }
    await cache.put(cacheUrl(await keyOf(planted)), new MiniflareResponse(JSON.stringify(row), { headers: { 'cache-control': 'max-age=300' } }))
    const before = total()
    const fromColo = await app.predict([planted], { entity: { user_id: 'u-1' } })
    expect(fromColo.headers.get('x-cache')).toBe('HIT')
    expect(fromColo.body.predictions[0]).toEqual({ label: 'high_risk', probability: 0.75, scores: row.scores })
    expect(total()).toBe(before)
  })

  it(`keeps at most ${MAX_ENTRIES} rows per isolate, dropping the least recently used`, async () => {
    const evictions = await metricSum('edge_infer_edge_cache_evictions_total{model="credit-risk",version="2"}')
    const rows = Array.from({ length: MAX_ENTRIES + 1 }, fresh)
    expect((await app.predict(rows, { entity: { user_id: 'u-1' } })).headers.get('x-cache')).toBe('MISS')
    // The newest MAX_ENTRIES rows are kept; the first was dropped to make room.
    await untilHit(rows.slice(1), { entity: { user_id: 'u-1' } })
    expect((await app.predict([rows[0]], { entity: { user_id: 'u-1' } })).headers.get('x-cache')).toBe('MISS')
    expect(await metricSum('edge_infer_edge_cache_evictions_total{model="credit-risk",version="2"}')).toBeGreaterThanOrEqual(evictions + 1)
  })
})

describe('the entry size bound, in workerd', () => {
  let small: RunningWorker | undefined
  afterAll(async () => {
    await small?.dispose()
  })

  it('serves but never caches an answer larger than PREDICTION_CACHE_MAX_ENTRY_BYTES', async () => {
    small = await startWorker({ BACKEND_URL: hop.url, API_KEYS: stack.apiKeys, PREDICTION_CACHE_MAX_ENTRY_BYTES: '16' })
    const client = edgeClient(small.url, { key: stack.keys.app! })
    const owner = edgeClient(small.url, { key: stack.keys.ops! })
    expect((await replaceRollout(owner, { salt: 'small', arms: [{ variant: 'stable', version: 2, weight: 100 }], cache: CACHE })).status).toBe(200)
    const row = fresh()
    const before = callsTo(2)
    for (let i = 0; i < 4; i++) {
      const res = await client.predict([row], { entity: { user_id: 'u-1' } })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-cache')).toBe('MISS')
    }
    expect(callsTo(2)).toBe(before + 4)
  })
})
