import {
  EDGE_FAILURES,
  type GroundTruthStore,
  type LabelOutcome,
  type LabelWrite,
  type CountsSlot,
  type MinuteFields,
  type Served,
  type ServedKey,
  type ServedRecord,
  type WindowCounts,
  addMinute,
  countsKeys,
  emptyWindow,
  labelFields,
  servedName,
  windowReads,
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

const slotName = (model: string, version: number, { unit, at }: CountsSlot): string => `${model} ${version} ${unit}${at}`

/** This isolate's records and counts, for an edge without Redis: nothing outlives the isolate. */
export class MemoryGroundTruth implements GroundTruthStore {
  readonly #records = new Map<string, Kept>()
  /** Minute and hour counts by model, version and slot, each with when it expires (epoch seconds). */
  readonly #counts = new Map<string, { fields: MinuteFields; expiresAt: number }>()
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
      this.#add(count.model, count.version, count.minute, labelFields(count))
      return 'counted'
    })
  }

  /** Adds `deltas` into the minute's counts and its hour's, those still kept. */
  #add(model: string, version: number, minute: number, deltas: Iterable<[string, number]>): void {
    const now = this.#now()
    const rows = [...deltas]
    for (const key of countsKeys(minute, now)) {
      const name = slotName(model, version, key)
      let kept = this.#counts.get(name)
      if (!kept) {
        // Slots past their retention are dropped as new ones start.
        for (const [k, old] of this.#counts) if (old.expiresAt * 1_000 <= now) this.#counts.delete(k)
        this.#counts.set(name, (kept = { fields: new Map(), expiresAt: key.expiresAt }))
      }
      for (const [field, delta] of rows) kept.fields.set(field, (kept.fields.get(field) ?? 0) + delta)
    }
  }

  async edgeFailure(model: string, version: number, minute: number): Promise<void> {
    this.#add(model, version, minute, [[EDGE_FAILURES, 1]])
  }

  async window(model: string, version: number, fromMinute: number, toMinute: number): Promise<WindowCounts> {
    const counts = emptyWindow()
    const now = this.#now()
    for (const slot of windowReads(fromMinute, toMinute)) {
      const kept = this.#counts.get(slotName(model, version, slot))
      if (kept && kept.expiresAt * 1_000 > now) addMinute(counts, kept.fields)
    }
    return counts
  }
}
