import {
  EDGE_FAILURES,
  type GroundTruthStore,
  type LabelOutcome,
  type LabelWrite,
  MAX_QUALITY_WINDOW_MINUTES,
  type MinuteFields,
  type Served,
  type ServedKey,
  type ServedRecord,
  type WindowCounts,
  addMinute,
  emptyWindow,
  labelFields,
  servedName,
} from './ground-truth-store.ts'

export interface MemoryGroundTruthOptions {
  /** Most served records kept; past it the oldest go first (default 100000). */
  maxRecords?: number
  now?: () => number
}

interface Kept {
  record: Served
  expiresAt: number
  /** The label of each labelled instance, by index. */
  marks: Map<number, string>
}

/** This isolate's records and counts, for an edge without Redis: nothing outlives the isolate. */
export class MemoryGroundTruth implements GroundTruthStore {
  readonly #records = new Map<string, Kept>()
  readonly #minutes = new Map<string, MinuteFields>()
  readonly #maxRecords: number
  readonly #now: () => number

  constructor({ maxRecords = 100_000, now = Date.now }: MemoryGroundTruthOptions = {}) {
    this.#maxRecords = maxRecords
    this.#now = now
  }

  async serve(key: ServedKey, record: ServedRecord, ttlSeconds: number): Promise<void> {
    const name = servedName(key)
    this.#records.delete(name)
    this.#records.set(name, { record: { ...record, servedId: crypto.randomUUID() }, expiresAt: this.#now() + ttlSeconds * 1_000, marks: new Map() })
    if (this.#records.size > this.#maxRecords) this.#records.delete(this.#records.keys().next().value!)
  }

  #live(key: ServedKey): Kept | undefined {
    const name = servedName(key)
    const kept = this.#records.get(name)
    if (kept && kept.expiresAt <= this.#now()) {
      this.#records.delete(name)
      return undefined
    }
    return kept
  }

  async records(keys: readonly ServedKey[]): Promise<Array<Served | undefined>> {
    return keys.map((key) => this.#live(key)?.record)
  }

  async label(writes: readonly LabelWrite[]): Promise<LabelOutcome[]> {
    return writes.map(({ key, servedId, index, label, count }) => {
      const kept = this.#live(key)
      if (kept?.record.servedId !== servedId) return 'gone'
      const mark = kept.marks.get(index)
      if (mark !== undefined) return mark === label ? 'already' : 'duplicate'
      kept.marks.set(index, label)
      const fields = this.#minute(count.model, count.version, count.minute)
      for (const [name, delta] of labelFields(count)) fields.set(name, (fields.get(name) ?? 0) + delta)
      return 'counted'
    })
  }

  #minute(model: string, version: number, minute: number): MinuteFields {
    const key = `${model} ${version} ${minute}`
    let fields = this.#minutes.get(key)
    if (fields) return fields
    // Minutes older than any window reads are dropped as new ones start.
    for (const k of this.#minutes.keys()) if (Number(k.split(' ')[2]) < minute - MAX_QUALITY_WINDOW_MINUTES) this.#minutes.delete(k)
    this.#minutes.set(key, (fields = new Map()))
    return fields
  }

  async edgeFailure(model: string, version: number, minute: number): Promise<void> {
    const fields = this.#minute(model, version, minute)
    fields.set(EDGE_FAILURES, (fields.get(EDGE_FAILURES) ?? 0) + 1)
  }

  async window(model: string, version: number, fromMinute: number, toMinute: number): Promise<WindowCounts> {
    const counts = emptyWindow()
    for (let m = fromMinute; m <= toMinute; m++) {
      const fields = this.#minutes.get(`${model} ${version} ${m}`)
      if (fields) addMinute(counts, fields)
    }
    return counts
  }
}
