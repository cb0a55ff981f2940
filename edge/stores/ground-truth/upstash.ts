import type { Redis } from '@upstash/redis'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../../shared/upstash-client.ts'
import { OutgoingWrite, applyOnce, inDoubtAfter } from '../../../shared/write-once.ts'
import {
  type CountsSlot,
  EDGE_FAILURES,
  type GroundTruthStore,
  type LabelOutcome,
  type LabelWrite,
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

const SERVED_PREFIX = 'served:'
const RECORD_FIELD = 'r'
const SERVED_ID_FIELD = 'i'
const servedKey = (key: ServedKey): string => SERVED_PREFIX + servedName(key)
const markField = (index: number): string => `l${index}`
/** `quality:{model}:{version}:{minute}` for a minute (the name it always had), `…:h{hour}` for an hour. */
const countsKey = (model: string, version: number, { unit, at }: CountsSlot): string => `quality:${model}:${version}:${unit === 'm' ? '' : 'h'}${at}`

export interface UpstashGroundTruthOptions {
  /** Longest wait for Redis per call (default `DEFAULT_EDGE_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
  /** How long edge failures gather in the isolate before one write sends them all (default 1000 ms). */
  failureFlushMs?: number
  /** The clock that says which counts are still kept (default `Date.now`). */
  now?: () => number
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

/** Sends of one edge-failure batch within the request that counted it. */
const FAILURE_SENDS = 3

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Redis: a hash `served:{tenant}:{request id}` per served request (field `r` the record, `i` its
 * served id, `l{index}` the label of a labelled instance) that expires with the record's TTL, and
 * hashes `quality:{model}:{version}:{minute}` and `…:h{hour}` of counts per serving minute and hour,
 * each expiring at its retention (ground-truth-store.ts). Every call is one round trip within the time budget.
 */
export class UpstashGroundTruth implements GroundTruthStore {
  readonly #timeoutMs: number
  readonly #failureFlushMs: number
  readonly #now: () => number
  /** Edge failures not yet written, by model, version and minute (as JSON); `#flushing` is the write they will go out in. */
  #failures = new Map<string, number>()
  readonly #failuresOut = new OutgoingWrite<Map<string, number>>('edge-failures')
  #flushing: Promise<void> | undefined

  constructor(private readonly redis: Redis, { timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS, failureFlushMs = 1_000, now = Date.now }: UpstashGroundTruthOptions = {}) {
    this.#timeoutMs = timeoutMs
    this.#now = now
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
    const now = this.#now()
    const items = writes.map(({ key, servedId, index, label, count }) => [
      keyAt(servedKey(key)),
      servedId,
      markField(index),
      label,
      // The served minute's counts and its hour's, each with the time it expires at (gone ones left out).
      countsKeys(count.minute, now).map((slot) => [keyAt(countsKey(count.model, count.version, slot)), String(slot.expiresAt)]),
      // Sums of scores and log losses are fractional; the rest are whole counts. Deltas go as text: Lua's cjson keeps 14 digits.
      labelFields(count).map(([name, delta]) => [name === 'll' || name.startsWith('s') ? 'HINCRBYFLOAT' : 'HINCRBY', name, String(delta)]),
    ])
    const answer = await inDoubtAfter(`feedback labels (${writes.length})`, this.#timeoutMs, this.redis.eval(LABEL_SCRIPT, keys, [JSON.stringify(items)]))
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
    const key = JSON.stringify([model, version, minute])
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
          }, (id, batch) => applyOnce(this.redis, id, [...batch].flatMap(([at, n]) => {
            const [model, version, minute] = JSON.parse(at) as [string, number, number]
            return countsKeys(minute, this.#now()).flatMap((slot) => {
              const name = countsKey(model, version, slot)
              return [['HINCRBY', name, EDGE_FAILURES, String(n)], ['EXPIREAT', name, String(slot.expiresAt)]]
            })
          }), { timeoutMs: this.#timeoutMs }))
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
    for (const slot of windowReads(fromMinute, toMinute)) pipeline.hgetall(countsKey(model, version, slot))
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
 * ARGV[1] the items as JSON, each [served key's index in KEYS, served id, mark field, label,
 * [[counts key's index, expire-at seconds], ...], [[command, field, delta], ...]]: the mark and
 * every counts key's deltas go in together, so a label is counted in its minute and its hour once. Per item: -1 when the
 * record is not the one read (expired or served again), 0 when the instance holds another label,
 * 2 when it holds this one (an earlier write landed), else 1: marked and counted.
 */
const LABEL_SCRIPT = `
local items = cjson.decode(ARGV[1])
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
      for _, target in ipairs(item[5]) do
        local counts = KEYS[target[1]]
        for _, c in ipairs(item[6]) do redis.call(c[1], counts, c[2], c[3]) end
        redis.call('EXPIREAT', counts, target[2])
      end
      out[n] = 1
    end
  end
end
return out
`
