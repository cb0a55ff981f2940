import type { Redis } from '@upstash/redis'
import { binIndex } from '../../shared/drift/statistics.ts'
import { PREDICTION_EDGES, type QualityBin, rowLogLoss } from '../../shared/quality.ts'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../shared/upstash-client.ts'
import { OutgoingWrite, applyOnce, inDoubtAfter } from '../../shared/write-once.ts'

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

/**
 * Whose request a record is: the caller's tenant and the request id it was answered under. Two
 * tenants may send the same id and each keeps its own record; a tenant that reuses one of its own
 * ids replaces that record (see `serve`).
 */
export interface ServedKey {
  tenant: string
  requestId: string
}

/** A record as the store holds it: `servedId` names this one serving of the key, not any earlier one under the same id. */
export interface Served extends ServedRecord {
  servedId: string
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

/** A label for one instance of a record read from the store, and what it adds to the counts. */
export interface LabelWrite {
  key: ServedKey
  /** The `servedId` of the record the label was checked against. */
  servedId: string
  index: number
  label: string
  count: LabelCount
}

/**
 * What a label write did: `counted` now; `already` counted by an earlier write of the same label
 * (a resend); `duplicate`, the instance holds another label (the first stands); `gone`, the record
 * expired or was replaced since it was read.
 */
export type LabelOutcome = 'counted' | 'already' | 'duplicate' | 'gone'

/** Upper bounds (seconds) of the label-delay histogram's buckets; one more bucket holds the rest. */
export const DELAY_BUCKETS = [60, 600, 3_600, 21_600, 86_400, 604_800, 2_592_000] as const

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
  /**
   * Keeps what was served under `key` for `ttlSeconds`, with a fresh `servedId`. A key served
   * again (a tenant reusing its own request id) is replaced whole: the labels of the earlier
   * serving go with it, and labels from then on are for the new one.
   */
  serve(key: ServedKey, record: ServedRecord, ttlSeconds: number): Promise<void>
  records(keys: readonly ServedKey[]): Promise<Array<Served | undefined>>
  /**
   * Marks each instance with its label and adds its counts, both at once per item: a write whose
   * answer was lost may be sent again whole, and a label already written is not counted twice.
   */
  label(writes: readonly LabelWrite[]): Promise<LabelOutcome[]>
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

const delayBucket = (seconds: number): number => {
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
  record: Served
  expiresAt: number
  /** The label of each labelled instance, by index. */
  marks: Map<number, string>
}

/** One name per served key, the same in memory and in Redis (a tenant name has no ":"). */
const servedName = ({ tenant, requestId }: ServedKey): string => `${tenant}:${requestId}`

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

const SERVED_PREFIX = 'served:'
const RECORD_FIELD = 'r'
const SERVED_ID_FIELD = 'i'
const servedKey = (key: ServedKey): string => SERVED_PREFIX + servedName(key)
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

/** A record as HMGET r i answered it: both values in order (raw client), an object of both (deserializing client), or null. */
const parseServed = (answer: unknown): Served | undefined => {
  const fields = (typeof answer === 'object' && answer !== null ? answer : {}) as Record<string, unknown>
  const [raw, servedId] = Array.isArray(answer) ? answer : [fields[RECORD_FIELD], fields[SERVED_ID_FIELD]]
  if (typeof servedId !== 'string' || (typeof raw !== 'string' && (typeof raw !== 'object' || raw === null))) return undefined
  try {
    const value = (typeof raw === 'string' ? JSON.parse(raw) : raw) as ServedRecord
    return typeof value.model === 'string' && Number.isSafeInteger(value.version) && Array.isArray(value.scores) && Array.isArray(value.labels) ? { ...value, servedId } : undefined
  } catch {
    return undefined
  }
}

/**
 * Redis: a hash `served:{tenant}:{request id}` per served request (field `r` the record, `i` its
 * served id, `l{index}` the label of a labelled instance) that expires with the record's TTL, and
 * a hash `quality:{model}:{version}:{minute}` per minute of counts, kept as long as the longest
 * window. Every call is one round trip within the time budget.
 */
/** Sends of one edge-failure batch within the request that counted it. */
const FAILURE_SENDS = 3

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export class UpstashGroundTruth implements GroundTruthStore {
  readonly #timeoutMs: number
  readonly #failureFlushMs: number
  /** Edge failures not yet written, by minute key; `#flushing` is the write they will go out in. */
  #failures = new Map<string, number>()
  readonly #failuresOut = new OutgoingWrite<Map<string, number>>('edge-failures')
  #flushing: Promise<void> | undefined

  constructor(private readonly redis: Redis, { timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS, failureFlushMs = 1_000 }: UpstashGroundTruthOptions = {}) {
    this.#timeoutMs = timeoutMs
    this.#failureFlushMs = failureFlushMs
  }

  async serve(key: ServedKey, record: ServedRecord, ttlSeconds: number): Promise<void> {
    await within(this.redis.eval(SERVE_SCRIPT, [servedKey(key)], [JSON.stringify(record), crypto.randomUUID(), String(ttlSeconds)]), this.#timeoutMs)
  }

  async records(keys: readonly ServedKey[]): Promise<Array<Served | undefined>> {
    if (keys.length === 0) return []
    const pipeline = this.redis.pipeline()
    for (const key of keys) pipeline.hmget(servedKey(key), RECORD_FIELD, SERVED_ID_FIELD)
    const answers = await within(pipeline.exec<unknown[]>(), this.#timeoutMs)
    return answers.map(parseServed)
  }

  /**
   * One script for every item: each instance's mark and its counts are applied together, after
   * its mark is checked, so the mark is the item's write id. A timeout is `WriteInDoubt`; sending
   * the same writes again is always safe.
   */
  async label(writes: readonly LabelWrite[]): Promise<LabelOutcome[]> {
    if (writes.length === 0) return []
    const keys: string[] = []
    const slot = new Map<string, number>()
    // Lua's KEYS are 1-based.
    const keyAt = (key: string): number => slot.get(key) ?? (slot.set(key, keys.push(key)), keys.length)
    const items = writes.map(({ key, servedId, index, label, count }) => [
      keyAt(servedKey(key)),
      servedId,
      markField(index),
      label,
      keyAt(minuteKey(count.model, count.version, count.minute)),
      // Sums of scores and log losses are fractional; the rest are whole counts. Deltas go as text: Lua's cjson keeps 14 digits.
      labelFields(count).map(([name, delta]) => [name === 'll' || name.startsWith('s') ? 'HINCRBYFLOAT' : 'HINCRBY', name, String(delta)]),
    ])
    const answer = await inDoubtAfter(`feedback labels (${writes.length})`, this.#timeoutMs, this.redis.eval(LABEL_SCRIPT, keys, [String(COUNTS_TTL_SECONDS), JSON.stringify(items)]))
    return writes.map((_, i) => LABEL_OUTCOMES[String(Array.isArray(answer) ? answer[i] : undefined)] ?? 'gone')
  }

  /**
   * Counted in the isolate and written with every other failure of the next `failureFlushMs` in one
   * round trip: a backend that is down fails every call, and each must not cost a Redis write.
   * Each write applies once by its id (shared/write-once.ts): one that gets no answer is in doubt
   * and goes again whole, with its id, before the next batch. Resolves (or rejects) when the write
   * this count went out in is answered, or after its last send (then it is in doubt and goes again first with the next flush).
   */
  edgeFailure(model: string, version: number, minute: number): Promise<void> {
    const key = minuteKey(model, version, minute)
    this.#failures.set(key, (this.#failures.get(key) ?? 0) + 1)
    return (this.#flushing ??= sleep(this.#failureFlushMs).then(async () => {
      this.#flushing = undefined
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.#failuresOut.sendWith(() => {
            if (this.#failures.size === 0) return undefined
            const batch = this.#failures
            this.#failures = new Map()
            return batch
          }, (id, batch) => applyOnce(this.redis, id, [...batch].flatMap(([name, n]) => [['HINCRBY', name, EDGE_FAILURES, String(n)], ['EXPIRE', name, String(COUNTS_TTL_SECONDS)]]), { timeoutMs: this.#timeoutMs }))
        } catch (error) {
          // Resent with backoff in the background of the request that counted it; past the last
          // attempt it stays in doubt and goes first with the next count.
          if (attempt >= FAILURE_SENDS) throw error
          await sleep(this.#failureFlushMs * 2 ** (attempt - 1))
        }
      }
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

/** KEYS[1] the served key; ARGV the record, its served id and TTL. A key served again starts with no labels. */
const SERVE_SCRIPT = `
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], '${RECORD_FIELD}', ARGV[1], '${SERVED_ID_FIELD}', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
`

const LABEL_OUTCOMES: Record<string, LabelOutcome> = { '1': 'counted', '2': 'already', '0': 'duplicate', '-1': 'gone' }

/**
 * ARGV[1] the counts' TTL; ARGV[2] the items as JSON, each [served key's index in KEYS, served id,
 * mark field, label, minute key's index, [[command, field, delta], ...]]. Per item: -1 when the
 * record is not the one read (expired or served again), 0 when the instance holds another label,
 * 2 when it holds this one (an earlier write landed), else 1: marked and counted.
 */
const LABEL_SCRIPT = `
local items = cjson.decode(ARGV[2])
local out = {}
for n, item in ipairs(items) do
  local served = KEYS[item[1]]
  if redis.call('HGET', served, '${SERVED_ID_FIELD}') ~= item[2] then out[n] = -1
  else
    local mark = redis.call('HGET', served, item[3])
    if mark == item[4] then out[n] = 2
    elseif mark then out[n] = 0
    else
      redis.call('HSET', served, item[3], item[4])
      local minute = KEYS[item[5]]
      for _, c in ipairs(item[6]) do redis.call(c[1], minute, c[2], c[3]) end
      redis.call('EXPIRE', minute, ARGV[1])
      out[n] = 1
    end
  end
end
return out
`
