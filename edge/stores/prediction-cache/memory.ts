import type { CachedRow, PredictionCacheStore } from './prediction-cache-store.ts'

/**
 * The prediction cache of a runtime without the Cache API (the app in Node: tests, benchmarks):
 * this isolate's memory, entries dropped once their TTL is over. Its size is bounded by the
 * stage's index, which deletes what it evicts.
 */
export class MemoryPredictionCache implements PredictionCacheStore {
  readonly #entries = new Map<string, { row: CachedRow; expiresAt: number }>()

  constructor(private readonly now: () => number = Date.now) {}

  async get(key: string): Promise<CachedRow | undefined> {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt > this.now()) return entry.row
    this.#entries.delete(key)
    return undefined
  }

  async put(key: string, row: CachedRow, ttlSeconds: number): Promise<void> {
    this.#entries.set(key, { row, expiresAt: this.now() + ttlSeconds * 1_000 })
  }

  async delete(key: string): Promise<void> {
    this.#entries.delete(key)
  }
}
