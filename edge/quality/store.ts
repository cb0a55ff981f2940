import type { Redis } from '@upstash/redis'
import { binIndex } from '../../shared/drift/statistics.ts'
import { PREDICTION_EDGES, type QualityBin, rowLogLoss } from '../../shared/quality.ts'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../shared/upstash-client.ts'

/** What the edge served one predict request, kept until its labels arrive or its TTL passes. */
export interface ServedRecord {
  model: string
  version: number
  variant: string
  /** When it was served (epoch ms): a label's delay is counted from here. */
  at: number
  /** The model's labels, so feedback is checked against the labels it could have been. */
  labels: string[]
  /** P(labels[1]) per instance of the request, in request order. */
  scores: number[]
}

/** One instance of one served request. */
export interface LabelKey {
  requestId: string
  index: number
}

/** One accepted label, counted into its version's minute. */
export interface LabelCount {
  model: string
  version: number
  minute: number
  score: number
  positive: boolean
  delaySeconds: number
}

/** Upper bounds (seconds) of the label-delay histogram's buckets; one more bucket holds the rest. */
export const DELAY_BUCKETS = [60, 600, 3_600, 21_600, 86_400, 604_800, 2_592_000] as const

export type Mark = 'first' | 'repeat' | 'gone'

/** A version's counts summed over a range of minutes. */
export interface WindowCounts {
  /** Labelled rows and label-positive rows per prediction bin. */
  bins: QualityBin[]
  /** Σ score per prediction bin, over the labelled rows. */
  scoreSums: number[]
  logLossSum: number
  /** Labels per delay bucket (`DELAY_BUCKETS`, then the rest). */
  delays: number[]
  /** Calls to this version that failed at the edge without an answer from the backend. */
  edgeFailures: number
}

/**
 * Served records, their labels and the counts labels and edge-side failures add to: in Redis
 * when configured, so every isolate answers feedback for what any isolate served and the counts
 * are merged, else in this isolate.
 */
export interface GroundTruthStore {
  serve(requestId: string, record: ServedRecord, ttlSeconds: number): Promise<void>
  records(requestIds: readonly string[]): Promise<Array<ServedRecord | undefined>>
  /** Marks each instance labelled: its first mark, a repeat of one, or its record gone (expired since it was read). */
  mark(keys: readonly LabelKey[]): Promise<Mark[]>
  /** Takes marks back whose counts could not be written, so the label may be sent again. */
  unmark(keys: readonly LabelKey[]): Promise<void>
  count(labels: readonly LabelCount[]): Promise<void>
  edgeFailure(model: string, version: number, minute: number): Promise<void>
  window(model: string, version: number, fromMinute: number, toMinute: number): Promise<WindowCounts>
}

const BINS = PREDICTION_EDGES.length + 1

export const emptyWindow = (): WindowCounts => ({
  bins: Array.from({ length: BINS }, () => ({ rows: 0, positives: 0 })),
  scoreSums: new Array<number>(BINS).fill(0),
  logLossSum: 0,
  delays: new Array<number>(DELAY_BUCKETS.length + 1).fill(0),
  edgeFailures: 0,
})

export const delayBucket = (seconds: number): number => {
  const i = DELAY_BUCKETS.findIndex((le) => seconds <= le)
  return i < 0 ? DELAY_BUCKETS.length : i
}

/**
 * One minute's counts as hash fields, the same in Redis and in memory: `r`/`p`/`s` + bin for rows,
 * positives and Σ score, `ll` for Σ log loss, `d` + bucket for delays, `f` for edge failures.
 */
export type MinuteFields = Map<string, number>

export const labelFields = (label: LabelCount): Array<[string, number]> => {
  const bin = binIndex(PREDICTION_EDGES, label.score)
  return [
    [`r${bin}`, 1],
    [`p${bin}`, label.positive ? 1 : 0],
    [`s${bin}`, label.score],
    ['ll', rowLogLoss(label.score, label.positive)],
    [`d${delayBucket(label.delaySeconds)}`, 1],
  ]
}

export const EDGE_FAILURES = 'f'

/** Adds one minute's fields into a window. */
export const addMinute = (into: WindowCounts, fields: Iterable<[string, number]>): void => {
  for (const [name, value] of fields) {
    const kind = name.charAt(0)
    const i = Number(name.slice(1))
    if (name === 'll') into.logLossSum += value
    else if (name === EDGE_FAILURES) into.edgeFailures += value
    else if (kind === 'r' && i < BINS) into.bins[i].rows += value
    else if (kind === 'p' && i < BINS) into.bins[i].positives += value
    else if (kind === 's' && i < BINS) into.scoreSums[i] += value
    else if (kind === 'd' && i < into.delays.length) into.delays[i] += value
  }
}

/** Longest a minute's counts are kept: the longest window the quality route and the controller read, and a minute of slack. */
export const MAX_QUALITY_WINDOW_MINUTES = 24 * 60
const COUNTS_TTL_SECONDS = (MAX_QUALITY_WINDOW_MINUTES + 1) * 60

export interface MemoryGroundTruthOptions {
  /** Most served records kept; past it the oldest go first (default 100000). */
  maxRecords?: number
  now?: () => number
}

interface Kept {
  record: ServedRecord
  expiresAt: number
  marks: Set<number>
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

  async serve(requestId: string, record: ServedRecord, ttlSeconds: number): Promise<void> {
    this.#records.delete(requestId)
    this.#records.set(requestId, { record, expiresAt: this.#now() + ttlSeconds * 1_000, marks: new Set() })
    if (this.#records.size > this.#maxRecords) this.#records.delete(this.#records.keys().next().value!)
  }

  #live(requestId: string): Kept | undefined {
    const kept = this.#records.get(requestId)
    if (kept && kept.expiresAt <= this.#now()) {
      this.#records.delete(requestId)
      return undefined
    }
    return kept
  }

  async records(requestIds: readonly string[]): Promise<Array<ServedRecord | undefined>> {
    return requestIds.map((id) => this.#live(id)?.record)
  }

  async mark(keys: readonly LabelKey[]): Promise<Mark[]> {
    return keys.map(({ requestId, index }) => {
      const marks = this.#live(requestId)?.marks
      if (!marks) return 'gone'
      if (marks.has(index)) return 'repeat'
      marks.add(index)
      return 'first'
    })
  }

  async unmark(keys: readonly LabelKey[]): Promise<void> {
    for (const { requestId, index } of keys) this.#records.get(requestId)?.marks.delete(index)
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

  async count(labels: readonly LabelCount[]): Promise<void> {
    for (const label of labels) {
      const fields = this.#minute(label.model, label.version, label.minute)
      for (const [name, delta] of labelFields(label)) fields.set(name, (fields.get(name) ?? 0) + delta)
    }
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

const SERVED_PREFIX = 'served:'
const RECORD_FIELD = 'r'
const markField = (index: number): string => `l${index}`
const minuteKey = (model: string, version: number, minute: number): string => `quality:${model}:${version}:${minute}`

export interface UpstashGroundTruthOptions {
  /** Longest wait for Redis per call (default `DEFAULT_EDGE_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
  /** How long edge failures gather in the isolate before one write sends them all (default 1000 ms). */
  failureFlushMs?: number
}

/** A hash as HGETALL answered it: an object (deserialized) or a flat field, value array (raw), or null. */
const hashEntries = (answer: unknown): Array<[string, number]> => {
  const pairs: Array<[string, unknown]> = []
  if (Array.isArray(answer)) for (let i = 0; i + 1 < answer.length; i += 2) pairs.push([String(answer[i]), answer[i + 1]])
  else if (typeof answer === 'object' && answer !== null) pairs.push(...Object.entries(answer))
  return pairs.map(([name, value]): [string, number] => [name, Number(value)]).filter(([, v]) => Number.isFinite(v))
}

const parseRecord = (raw: unknown): ServedRecord | undefined => {
  if (typeof raw !== 'string' && (typeof raw !== 'object' || raw === null)) return undefined
  try {
    const value = (typeof raw === 'string' ? JSON.parse(raw) : raw) as ServedRecord
    return typeof value.model === 'string' && Number.isSafeInteger(value.version) && Array.isArray(value.scores) && Array.isArray(value.labels) ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * Redis: a hash `served:{request id}` per served request (field `r` the record, `l{index}` a
 * label's mark, set by HSETNX so only the first label of an instance counts) that expires with
 * the record's TTL, and a hash `quality:{model}:{version}:{minute}` per minute of counts, kept as
 * long as the longest window. Every call is one pipelined round trip within the time budget.
 */
export class UpstashGroundTruth implements GroundTruthStore {
  readonly #timeoutMs: number
  readonly #failureFlushMs: number
  /** Edge failures not yet written, by minute key; `#flushing` is the write they will go out in. */
  #failures = new Map<string, number>()
  #flushing: Promise<void> | undefined

  constructor(private readonly redis: Redis, { timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS, failureFlushMs = 1_000 }: UpstashGroundTruthOptions = {}) {
    this.#timeoutMs = timeoutMs
    this.#failureFlushMs = failureFlushMs
  }

  async serve(requestId: string, record: ServedRecord, ttlSeconds: number): Promise<void> {
    const key = SERVED_PREFIX + requestId
    const pipeline = this.redis.pipeline()
    pipeline.hset(key, { [RECORD_FIELD]: JSON.stringify(record) })
    pipeline.expire(key, ttlSeconds)
    await within(pipeline.exec(), this.#timeoutMs)
  }

  async records(requestIds: readonly string[]): Promise<Array<ServedRecord | undefined>> {
    if (requestIds.length === 0) return []
    const pipeline = this.redis.pipeline()
    for (const id of requestIds) pipeline.hget(SERVED_PREFIX + id, RECORD_FIELD)
    const answers = await within(pipeline.exec<unknown[]>(), this.#timeoutMs)
    return answers.map(parseRecord)
  }

  async mark(keys: readonly LabelKey[]): Promise<Mark[]> {
    if (keys.length === 0) return []
    // One script per request, marking its instances in the order given.
    const byRequest = new Map<string, number[]>()
    keys.forEach(({ requestId }, i) => byRequest.set(requestId, [...(byRequest.get(requestId) ?? []), i]))
    const pipeline = this.redis.pipeline()
    for (const [requestId, at] of byRequest) pipeline.eval(MARK_SCRIPT, [SERVED_PREFIX + requestId], at.map((i) => markField(keys[i].index)))
    const answers = await within(pipeline.exec<unknown[]>(), this.#timeoutMs)
    const marks = new Array<Mark>(keys.length)
    ;[...byRequest.values()].forEach((at, r) => {
      const answer = answers[r]
      at.forEach((i, j) => {
        const a = Array.isArray(answer) ? Number(answer[j]) : -1
        marks[i] = a === 1 ? 'first' : a === 0 ? 'repeat' : 'gone'
      })
    })
    return marks
  }

  async unmark(keys: readonly LabelKey[]): Promise<void> {
    if (keys.length === 0) return
    const pipeline = this.redis.pipeline()
    for (const { requestId, index } of keys) pipeline.hdel(SERVED_PREFIX + requestId, markField(index))
    await within(pipeline.exec(), this.#timeoutMs)
  }

  async count(labels: readonly LabelCount[]): Promise<void> {
    if (labels.length === 0) return
    // Summed here first: a batch of a thousand labels is a few dozen increments, not thousands.
    const minutes = new Map<string, MinuteFields>()
    for (const label of labels) {
      const key = minuteKey(label.model, label.version, label.minute)
      let fields = minutes.get(key)
      if (!fields) minutes.set(key, (fields = new Map()))
      for (const [name, delta] of labelFields(label)) fields.set(name, (fields.get(name) ?? 0) + delta)
    }
    const pipeline = this.redis.pipeline()
    for (const [key, fields] of minutes) {
      for (const [name, delta] of fields) {
        // Sums of scores and log losses are fractional; the rest are whole counts.
        if (name === 'll' || name.startsWith('s')) pipeline.hincrbyfloat(key, name, delta)
        else if (delta !== 0) pipeline.hincrby(key, name, delta)
      }
      pipeline.expire(key, COUNTS_TTL_SECONDS)
    }
    await within(pipeline.exec(), this.#timeoutMs)
  }

  /**
   * Counted in the isolate and written with every other failure of the next `failureFlushMs` in one
   * round trip: a backend that is down fails every call, and each must not cost a Redis write.
   * Resolves (or rejects) when the write it went out in has landed (or failed: those counts are lost).
   */
  edgeFailure(model: string, version: number, minute: number): Promise<void> {
    const key = minuteKey(model, version, minute)
    this.#failures.set(key, (this.#failures.get(key) ?? 0) + 1)
    return (this.#flushing ??= new Promise<void>((resolve) => setTimeout(resolve, this.#failureFlushMs)).then(async () => {
      const batch = this.#failures
      this.#failures = new Map()
      this.#flushing = undefined
      const pipeline = this.redis.pipeline()
      for (const [name, n] of batch) {
        pipeline.hincrby(name, EDGE_FAILURES, n)
        pipeline.expire(name, COUNTS_TTL_SECONDS)
      }
      await within(pipeline.exec(), this.#timeoutMs)
    }))
  }

  async window(model: string, version: number, fromMinute: number, toMinute: number): Promise<WindowCounts> {
    const pipeline = this.redis.pipeline()
    for (let m = fromMinute; m <= toMinute; m++) pipeline.hgetall(minuteKey(model, version, m))
    const minutes = await within(pipeline.exec<unknown[]>(), this.#timeoutMs)
    const counts = emptyWindow()
    for (const fields of minutes) addMinute(counts, hashEntries(fields))
    return counts
  }
}

/**
 * HSETNX of each field while the record is there (on an expired key it would create one without a
 * TTL): per field 1 for a first mark, 0 for a repeat; -1 for every field of a record gone.
 */
const MARK_SCRIPT = "local out = {} if redis.call('EXISTS', KEYS[1]) == 0 then for i = 1, #ARGV do out[i] = -1 end return out end for i = 1, #ARGV do out[i] = redis.call('HSETNX', KEYS[1], ARGV[i], '1') end return out"
