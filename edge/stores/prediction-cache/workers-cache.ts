import type { CachedRow, PredictionCacheStore } from './prediction-cache-store.ts'

/**
 * Cache API keys are URLs: this origin is never fetched, it only namespaces the entries beside
 * anything else the zone caches.
 */
const ORIGIN = 'https://prediction-cache.edge-infer.invalid/'

/** The Cache API request URL of a key (`rowKey`). */
export const cacheUrl = (key: string): string => ORIGIN + key

/** The named cache the worker keeps rows in. */
export const CACHE_NAME = 'edge-infer-predictions'

/** The part of the Workers Cache API used here (declared here: the project builds against Node's types, which have none). */
export interface WorkersCache {
  match(key: string): Promise<Response | undefined>
  put(key: string, res: Response): Promise<void>
  delete(key: string): Promise<boolean>
}

/** The runtime's `caches` global: in workerd, not in Node. */
const cacheStorage = (): { open(name: string): Promise<WorkersCache> } | undefined =>
  (globalThis as { caches?: { open(name: string): Promise<WorkersCache> } }).caches

/** A stored entry that is not one of ours (or not readable) is a miss, never a failed request. */
const parsed = (value: unknown): CachedRow | undefined => {
  if (typeof value !== 'object' || value === null) return undefined
  const { scores, at } = value as Record<string, unknown>
  if (typeof at !== 'number' || typeof scores !== 'object' || scores === null) return undefined
  return Object.values(scores).every((s) => typeof s === 'number') ? { scores: scores as Record<string, number>, at } : undefined
}

/**
 * The prediction cache in the Workers Cache API: per colo, free, no write quota, entries expire
 * by their `Cache-Control: max-age`. It cannot be listed, so the stage bounds how many entries
 * each isolate writes (its LRU index) and deletes what that index drops.
 */
export class WorkersPredictionCache implements PredictionCacheStore {
  constructor(private readonly cache: WorkersCache) {}

  /** The named cache of this worker; undefined where the runtime has no Cache API. */
  static async open(name = CACHE_NAME): Promise<WorkersPredictionCache | undefined> {
    const storage = cacheStorage()
    return storage && new WorkersPredictionCache(await storage.open(name))
  }

  async get(key: string): Promise<CachedRow | undefined> {
    const res = await this.cache.match(cacheUrl(key))
    if (res === undefined) return undefined
    return parsed(await res.json().catch(() => undefined))
  }

  async put(key: string, row: CachedRow, ttlSeconds: number): Promise<void> {
    await this.cache.put(cacheUrl(key), new Response(JSON.stringify(row), { headers: { 'content-type': 'application/json', 'cache-control': `max-age=${ttlSeconds}` } }))
  }

  async delete(key: string): Promise<void> {
    await this.cache.delete(cacheUrl(key))
  }
}
