import type { CachedRow } from '../../stores/prediction-cache/prediction-cache-store.ts'

/** What an index entry names (the series its eviction is counted in) and the row itself. */
export interface IndexedRow {
  model: string
  version: number
  row: CachedRow
}

/**
 * The rows this isolate wrote to the prediction cache, least recently used first, at most
 * `maxEntries`. Two jobs: the Cache API cannot be listed or sized, so this is where its count is
 * bounded (adding past the bound hands back the keys to delete from the store); and it answers
 * the rows it holds from memory, before any Cache API round trip.
 */
export class LruIndex {
  readonly #entries = new Map<string, IndexedRow>()

  constructor(readonly maxEntries: number) {}

  get size(): number {
    return this.#entries.size
  }

  /** The row under `key`, when this isolate wrote it, marked as just used. */
  get(key: string): CachedRow | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    this.#entries.delete(key)
    this.#entries.set(key, entry)
    return entry.row
  }

  /** Adds (or refreshes) `key`; returns the least recently used entries it pushed past the bound. */
  add(key: string, entry: IndexedRow): Array<[string, IndexedRow]> {
    this.#entries.delete(key)
    this.#entries.set(key, entry)
    const evicted: Array<[string, IndexedRow]> = []
    for (const oldest of this.#entries) {
      if (this.#entries.size <= this.maxEntries) break
      this.#entries.delete(oldest[0])
      evicted.push(oldest)
    }
    return evicted
  }
}
