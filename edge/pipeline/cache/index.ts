import { inBackground } from '../../background.ts'
import type { PredictableModel } from '../../backend-client/catalog.ts'
import type { EdgeSettings } from '../../bindings.ts'
import { MemoryPredictionCache } from '../../stores/prediction-cache/memory.ts'
import { type CachedRow, type PredictionCacheStore, rowKey } from '../../stores/prediction-cache/prediction-cache-store.ts'
import { WorkersPredictionCache } from '../../stores/prediction-cache/workers-cache.ts'
import type { RolloutStore } from '../../stores/rollouts/rollout-store.ts'
import type { RequestMetrics } from '../../stores/tallies/tally.ts'
import { type CachedAnswer, type ForwardVariables, encodeBatch } from '../forward/index.ts'
import type { RequestIdVariables } from '../request-id/index.ts'
import { type Prediction, toPrediction } from '../respond/predictions.ts'
import type { RouteVariables } from '../route/index.ts'
import type { Stage } from '../stage.ts'
import type { ValidateVariables } from '../validate/index.ts'
import { type IndexedRow, LruIndex } from './lru-index.ts'
import { type CachedRowsObserver, observationId } from './observe.ts'

/** `HIT` when every row of the answer came from the edge cache, else `MISS`; absent for a model without a cache. */
export const CACHE_HEADER = 'x-cache'

type CacheParts = { rollouts: RolloutStore; requestMetrics: RequestMetrics; settings: EdgeSettings; cacheObserver?: CachedRowsObserver }
type CacheNeeds = RequestIdVariables & ValidateVariables & RouteVariables & { model: PredictableModel; isolate: CacheParts } & Partial<ForwardVariables>

export interface CacheVariables {
  /** Set when every distinct row of the request was answered from the cache: forward then makes no call. */
  cached?: CachedAnswer
}

/** The cache store and the bounded index of what this isolate wrote, one pair per isolate (its parts object). */
interface IsolateCache {
  store: Promise<PredictionCacheStore>
  index: LruIndex
}
const perIsolate = new WeakMap<CacheParts, IsolateCache>()

const cacheOf = (isolate: CacheParts): IsolateCache => {
  let cache = perIsolate.get(isolate)
  if (cache === undefined) {
    const store = WorkersPredictionCache.open().then((workers) => workers ?? new MemoryPredictionCache())
    cache = { store, index: new LruIndex(isolate.settings.predictionCache.maxEntries) }
    perIsolate.set(isolate, cache)
  }
  return cache
}

/** A request that asks for a fresh answer (RFC 9111 `no-cache`, or `no-store`) neither reads nor writes the cache. */
const bypasses = (cacheControl: string | undefined): boolean =>
  cacheControl !== undefined && cacheControl.split(',').some((d) => /^\s*no-(cache|store)\s*$/i.test(d.split('=')[0] ?? ''))

/** A cached row as the model's postprocess labels it now; undefined when it no longer fits (labels changed). */
const revived = (row: CachedRow, model: PredictableModel): Prediction | undefined => {
  const probabilities = model.postprocess.labels.map((label) => row.scores[label])
  if (probabilities.some((p) => p === undefined)) return undefined
  try {
    return toPrediction(probabilities as number[], model.postprocess)
  } catch {
    return undefined
  }
}

/**
 * Sends the rows of a request answered from the cache to the backend's drift counter, in the
 * background (docs/prediction-cache.md): they never reached the backend, and drift counts every
 * served row. Rows the backend never confirmed are counted (`observe_failures`) and logged.
 */
const observe = (c: Parameters<Stage<CacheNeeds, CacheVariables>>[0], version: number, cached: number[], width: number, data: readonly number[], answers: ReadonlyArray<Prediction | undefined>): void => {
  const observer = c.get('isolate').cacheObserver
  if (observer === undefined || cached.length === 0) return
  const model = c.get('model')
  const id = observationId(c.get('requestId'), version)
  const probabilities = cached.flatMap((u) => model.postprocess.labels.map((label) => answers[u]!.scores[label]!))
  const rows = cached.flatMap((u) => data.slice(u * width, (u + 1) * width))
  inBackground(c, observer.send({ model: model.name, version, id, input: model.spec.input, width, data: rows, output: model.postprocess.output, probabilities, rows: cached.length }).then((outcome) => {
    if (outcome === 'counted') return
    c.get('isolate').requestMetrics.predictionCache(model.name, String(version), 'observe_failures', cached.length)
    console.log(JSON.stringify({ level: 'warn', msg: `cached rows not counted by the backend's drift counter (${outcome})`, model: model.name, version, id, rows: cached.length }))
  }))
}

const logFailure = (msg: string, model: string) => (err: unknown): undefined => {
  console.log(JSON.stringify({ level: 'warn', msg, model, error: err instanceof Error ? err.message : String(err) }))
  return undefined
}

/**
 * The edge prediction cache (docs/prediction-cache.md), for models whose rollout has a `cache`
 * block. Runs after routing: each distinct row is looked up under the version the request was
 * routed to (pin, arm or canary) and the SHA-256 of its encoded tensor row, in the isolate's
 * own rows first, then the colo's Cache API. When every row is
 * found, forward makes no call and the answer is the cache's (`X-Cache: HIT`, served by the
 * edge); otherwise forward sends only the missing rows and merges them in order (`X-Cache:
 * MISS`), except on a canary's request, which may fall back to stable and so sends every row
 * unless all are cached: one answer comes from one version. Each computed row of a 200 answer is
 * written under the version that answered it (stable's, after a canary fallback). Errors are never written; a request with
 * `Cache-Control: no-cache` or `no-store` neither reads nor writes. Shadow copies, served records
 * and request metrics see a cached answer as any other.
 */
export const predictionCache = (): Stage<CacheNeeds, CacheVariables> =>
  async function predictionCache(c, next) {
    const model = c.get('model')
    const isolate = c.get('isolate')
    // The route stage read the same rollout a moment ago: this read is the isolate's cached copy.
    const ttlSeconds = (await isolate.rollouts.get(model.name).catch(() => undefined))?.rollout.cache?.ttl_seconds
    if (ttlSeconds === undefined) return next()
    if (bypasses(c.req.header('cache-control'))) {
      await next()
      c.res.headers.set(CACHE_HEADER, 'MISS')
      return
    }
    const { store: opening, index } = cacheOf(isolate)
    const store = await opening
    const looked = c.get('assignment').version
    const { unique, width, data } = encodeBatch(model, c.get('predict').instances)
    const rows = unique.map((_, u) => Float32Array.from(data.slice(u * width, (u + 1) * width)))
    const hashed = await Promise.all(rows.map((row) => rowKey(model.name, looked, row)))
    const now = Date.now()
    // The isolate's own rows from memory; the Cache API for the rest (rows other isolates of the colo wrote).
    const found = await Promise.all(hashed.map((key) => index.get(key) ?? store.get(key).catch(logFailure('prediction cache read failed; a miss', model.name))))
    const answers = found.map((row) => (row !== undefined && now - row.at < ttlSeconds * 1_000 ? revived(row, model) : undefined))
    const cachedRows = answers.filter((a) => a !== undefined).length
    // A canary's request may fall back to stable, and its answer must then be stable's alone: it
    // takes cached rows only when every row is cached. Any other request sends only its misses.
    const usable = cachedRows === unique.length || (cachedRows > 0 && c.get('assignment').stable === undefined)
    const fromCache = usable ? cachedRows : 0
    const { requestMetrics } = isolate
    if (fromCache > 0) requestMetrics.predictionCache(model.name, String(looked), 'hits', fromCache)
    if (fromCache < unique.length) requestMetrics.predictionCache(model.name, String(looked), 'misses', unique.length - fromCache)
    if (usable) c.set('cached', { version: looked, predictions: answers })
    await next()
    const hit = fromCache === unique.length
    c.res.headers.set(CACHE_HEADER, hit ? 'HIT' : 'MISS')
    // After a canary fallback or a reroute the answer is another version's: keyed by that one.
    const served = c.get('assignment').version
    // Rows the answer took from the cache: none when a reroute sent every row to another version.
    if (c.res.status === 200 && usable && served === looked) observe(c, looked, unique.flatMap((_, u) => (answers[u] === undefined ? [] : [u])), width, data, answers)
    if (hit) return
    const inference = c.get('inference')
    if (c.res.status !== 200 || inference === undefined) return
    const { maxEntryBytes } = isolate.settings.predictionCache
    // Rows answered from the cache are not written again; after a reroute every row is the new version's.
    const computed = unique.flatMap((_, u) => (served !== looked || !usable || answers[u] === undefined ? [u] : []))
    inBackground(c, (async () => {
      const keyed = await Promise.all(computed.map(async (u): Promise<[string, CachedRow]> => [
        served === looked ? hashed[u] : await rowKey(model.name, served, rows[u]),
        { scores: inference.predictions[u].scores, at: now },
      ]))
      const entries = keyed.filter(([, entry]) => JSON.stringify(entry).length <= maxEntryBytes)
      // The index first, synchronously: what it drops is deleted after the puts, so a put never lands after its own key's delete.
      const evicted = new Map<string, IndexedRow>()
      for (const [key, row] of entries) for (const [gone, named] of index.add(key, { model: model.name, version: served, row })) evicted.set(gone, named)
      for (const named of evicted.values()) requestMetrics.predictionCache(named.model, String(named.version), 'evictions', 1)
      await Promise.all(entries.filter(([key]) => !evicted.has(key)).map(([key, entry]) => store.put(key, entry, ttlSeconds)))
      await Promise.all([...evicted.keys()].map((gone) => store.delete(gone)))
    })().catch((err: unknown) => void logFailure('prediction cache write failed', model.name)(err)))
  }
