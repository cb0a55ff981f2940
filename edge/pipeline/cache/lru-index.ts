/** What an index entry names: the series its eviction is counted in. */
export interface IndexedRow {
  model: string
  version: number
}

/**
 * The keys this isolate wrote to the prediction cache, least recently used first, at most
 * `maxEntries`: the Cache API cannot be listed or sized, so this is where its count is bounded.
 * Adding past the bound hands back the keys to delete from the store.
 */
export class LruIndex {
  readonly #entries = new Map<string, IndexedRow>()

  constructor(readonly maxEntries: number) {}

  get size(): number {
    return this.#entries.size
  }

  /** Marks `key` as just used (a hit), when this isolate wrote it. */
  touch(key: string): void {
    const row = this.#entries.get(key)
    if (row === undefined) return
    this.#entries.delete(key)
    this.#entries.set(key, row)
  }

  /** Adds (or refreshes) `key`; returns the least recently used keys it pushed past the bound. */
  add(key: string, row: IndexedRow): Array<[string, IndexedRow]> {
    this.#entries.delete(key)
    this.#entries.set(key, row)
    const evicted: Array<[string, IndexedRow]> = []
    for (const entry of this.#entries) {
      if (this.#entries.size <= this.maxEntries) break
      this.#entries.delete(entry[0])
      evicted.push(entry)
    }
    return evicted
  }
}
