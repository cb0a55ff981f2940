import { OutgoingWrite } from '../../../shared/write-once.ts'

/** Upper bounds (seconds) of the request-duration histogram's buckets; one more bucket holds the rest (+Inf). */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const

/** Which tier's answer a response carries; `edge` for every answer the edge made itself. */
export type ServedBy = 'backend' | 'lambda' | 'edge'

/** One answered request (or shadow call), labelled as the metrics label it. */
export interface RequestOutcome {
  model: string
  version: string
  variant: string
  code: number
  servedBy: ServedBy
  seconds: number
}

/**
 * Every series is one field of a tally (and of the Redis hash): its kind and label values joined
 * by spaces, which no label value holds (model names, variants and actions are `[a-z0-9._-]`).
 * Bucket counts are per bucket, not cumulative, so that every isolate's deltas simply add up.
 */
export type Tally = Map<string, number>

const SEPARATOR = ' '
export const REQUESTS = 'requests'
export const BUCKET = 'bucket'
/** Durations summed in whole microseconds: integer increments add exactly, in Redis as here. */
export const SUM_US = 'sum_us'
export const DECISIONS = 'decisions'
export const FALLBACKS = 'canary_fallbacks'
export const FEEDBACK = 'feedback'
/** Per API key: requests whose input needed fixing, and the fixes applied. */
export const NORMALIZED = 'normalized'
export const NORMALIZATION_FIXES = 'normalization_fixes'
/** Per model and version: rows the edge prediction cache answered, forwarded, dropped to keep its bound, or answered but never confirmed counted by the backend's drift counter. */
export const PREDICTION_CACHE = 'prediction_cache'
export type PredictionCacheOutcome = 'hits' | 'misses' | 'evictions' | 'observe_failures'
/** Per (model, served version, shadow version): rows compared, rows whose labels agree, Σ|Δp| in millionths, |Δp| per bucket. */
export const SHADOW_ROWS = 'shadow_rows'
export const SHADOW_AGREEING = 'shadow_agreeing'
export const SHADOW_DIFF_SUM = 'shadow_diff_sum_u'
export const SHADOW_DIFF_BUCKET = 'shadow_diff_bucket'

/**
 * Upper bounds of the |Δp| histogram's buckets (the absolute difference between the shadow's and
 * the served probability of the label the shadow chose); one more bucket holds the rest (+Inf).
 */
export const SHADOW_DIFF_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5] as const

/** One shadow call's answer set against what the client was served, row by row. */
export interface ShadowComparison {
  model: string
  servedVersion: number
  shadowVersion: number
  /** Rows whose labels agree. */
  agreeing: number
  /** |Δp| per row compared. */
  diffs: readonly number[]
}

export const field = (...parts: ReadonlyArray<string | number>): string => parts.join(SEPARATOR)
export const fieldParts = (name: string): string[] => name.split(SEPARATOR)

const bucketOf = (value: number, bounds: readonly number[] = DURATION_BUCKETS): number => {
  let i = 0
  while (i < bounds.length && value > bounds[i]) i++
  return i
}

/** Where every isolate's deltas are summed: a Redis hash, when Upstash is configured. */
export interface SharedTally {
  /** Adds `deltas` once per `writeId`, however often it is sent (shared/write-once.ts). */
  add(writeId: string, deltas: Tally): Promise<void>
  read(): Promise<Tally>
}

export const REQUEST_METRICS_HASH = 'metrics:requests'

export interface RequestMetricsOptions {
  /** Where isolates sum their counts; none keeps this isolate's own. */
  shared?: SharedTally
  /** Longest time deltas wait in the isolate before a flush to `shared` starts (default 1000 ms). */
  flushEveryMs?: number
  /** Changed fields at which a flush starts at once, without waiting for the interval (default 256). */
  flushAtFields?: number
  /** Most changed fields held in the isolate beside a write in doubt; deltas of new fields beyond it are dropped (default 4096). */
  maxPendingFields?: number
  now?: () => number
  sleep?: (ms: number) => Promise<void>
  log?: (line: string) => void
}

export const DEFAULT_METRICS_FLUSH_MS = 1_000

const add = (tally: Tally, name: string, delta: number): void => {
  tally.set(name, (tally.get(name) ?? 0) + delta)
}

/**
 * The edge's request, canary-fallback, feedback, normalization, shadow-comparison and rollout-decision counts.
 * Recording is synchronous and touches only the isolate's memory: with Redis, the deltas go out
 * in one write at most every `flushEveryMs` (sooner when many fields changed), in the background
 * of a request, so Redis is never on a request's path. Each write carries an id and applies once
 * (shared/write-once.ts): one that fails or times out is in doubt and is sent again whole, with
 * its id, before anything counted since goes out; an isolate evicted between flushes loses what
 * it counted since the last one.
 *
 * Longest hold: a count starts out within `flushEveryMs` of being recorded, or, when a write is
 * in flight then, as soon as that write is answered or times out (its Redis budget later), with
 * no further request needed. Only a write in doubt (a failing Redis) holds counts longer.
 */
export class RequestMetrics {
  readonly #shared: SharedTally | undefined
  readonly #flushEveryMs: number
  readonly #flushAtFields: number
  readonly #maxPendingFields: number
  readonly #now: () => number
  readonly #sleep: (ms: number) => Promise<void>
  readonly #log: (line: string) => void
  /** Without Redis, the totals; with it, what has not been sent yet. */
  #counts: Tally = new Map()
  readonly #outgoing = new OutgoingWrite<Tally>('edge-metrics')
  /** Models the catalog described, so refusals that name them keep the name (others are "other"). */
  readonly #models = new Set<string>()
  #lastFlushAt: number
  /** When the flush already waiting for the interval's end will run. */
  #trailingAt: number | undefined
  #flushing: Promise<void> | undefined
  /** The flush that starts as the one in flight ends, for what was counted meanwhile. */
  #queued: Promise<void> | undefined
  #failing = false
  /** Deltas of new fields dropped at the bound since the last log line. */
  #dropped = 0

  constructor({
    shared,
    flushEveryMs = DEFAULT_METRICS_FLUSH_MS,
    flushAtFields = 256,
    maxPendingFields = 4_096,
    now = Date.now,
    sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    log = (line) => console.error(line),
  }: RequestMetricsOptions = {}) {
    this.#shared = shared
    this.#flushEveryMs = flushEveryMs
    this.#flushAtFields = flushAtFields
    this.#maxPendingFields = maxPendingFields
    this.#now = now
    this.#sleep = sleep
    this.#log = log
    this.#lastFlushAt = now()
  }

  /** Notes a model the catalog knows. */
  knowModel(name: string): void {
    this.#models.add(name)
  }

  knowsModel(name: string): boolean {
    return this.#models.has(name)
  }

  request({ model, version, variant, code, servedBy, seconds }: RequestOutcome): void {
    this.#add(field(REQUESTS, model, version, variant, code, servedBy), 1)
    this.#add(field(BUCKET, model, version, variant, bucketOf(seconds)), 1)
    this.#add(field(SUM_US, model, version, variant), Math.round(seconds * 1e6))
  }

  /** A canary's failed call retried on stable: `version` is the canary's. */
  canaryFallback(model: string, version: string, reason: string): void {
    this.#add(field(FALLBACKS, model, version, reason), 1)
  }

  /** One feedback item and what became of it; `model` is "none" when no served record named one. */
  feedback(model: string, result: string): void {
    this.#add(field(FEEDBACK, model, result), 1)
  }

  predictionCache(model: string, version: string, outcome: PredictionCacheOutcome, rows: number): void {
    this.#add(field(PREDICTION_CACHE, model, version, outcome), rows)
  }

  decision(model: string, action: string): void {
    this.#add(field(DECISIONS, model, action), 1)
  }

  /** A shadow call's rows compared with the served ones. */
  shadowCompared({ model, servedVersion, shadowVersion, agreeing, diffs }: ShadowComparison): void {
    const pair = [model, servedVersion, shadowVersion] as const
    this.#add(field(SHADOW_ROWS, ...pair), diffs.length)
    this.#add(field(SHADOW_AGREEING, ...pair), agreeing)
    let sum = 0
    for (const diff of diffs) {
      sum += Math.round(diff * 1e6)
      this.#add(field(SHADOW_DIFF_BUCKET, ...pair, bucketOf(diff, SHADOW_DIFF_BUCKETS)), 1)
    }
    this.#add(field(SHADOW_DIFF_SUM, ...pair), sum)
  }

  /** A request of the API key named `keyName` whose input needed `fixes` fixes. */
  normalized(keyName: string, fixes: number): void {
    this.#add(field(NORMALIZED, keyName), 1)
    this.#add(field(NORMALIZATION_FIXES, keyName), fixes)
  }

  /**
   * The flush these counts need, for the caller to run in the background (`waitUntil`): at once
   * when many fields changed, else when the interval since the last flush is over (after the
   * flush in flight, if one is). Undefined when none is needed or one is already on its way.
   */
  flushDue(): Promise<void> | undefined {
    if (!this.#shared || (this.#counts.size === 0 && !this.#outgoing.inDoubt)) return undefined
    const dueAt = this.#lastFlushAt + this.#flushEveryMs
    const now = this.#now()
    if (now >= dueAt || this.#counts.size >= this.#flushAtFields) return this.#queued ? undefined : this.flush()
    // One waiting flush per interval. Should the runtime drop it (an isolate evicted), the first
    // request after `dueAt` flushes itself: nothing waits on a timer that never fires.
    if (this.#trailingAt === dueAt) return undefined
    this.#trailingAt = dueAt
    return this.#sleep(dueAt - now).then(() => this.flush())
  }

  /**
   * Sends the write in doubt, if any, then the deltas counted since; never rejects (a write that
   * is not answered stays in doubt for the next flush). Called while a flush is in flight, it
   * runs once that one ends, so nothing counted meanwhile waits for a later request.
   */
  flush(): Promise<void> {
    if (this.#flushing) {
      return (this.#queued ??= this.#flushing.then(() => {
        this.#queued = undefined
        return this.flush()
      }))
    }
    const shared = this.#shared
    if (!shared || (this.#counts.size === 0 && !this.#outgoing.inDoubt)) return Promise.resolve()
    this.#lastFlushAt = this.#now()
    this.#flushing = this.#send(shared).finally(() => {
      this.#flushing = undefined
    })
    return this.#flushing
  }

  /** Every count: this isolate's, or with Redis every isolate's after this one's deltas are flushed. */
  async totals(): Promise<Tally> {
    if (!this.#shared) return new Map(this.#counts)
    while (this.#flushing) await this.#flushing
    await this.flush()
    return this.#shared.read()
  }

  #add(name: string, delta: number): void {
    // Bounded only while counts wait for Redis: without it, these are the totals.
    if (this.#shared && !this.#counts.has(name) && this.#counts.size >= this.#maxPendingFields) {
      this.#dropped++
      return
    }
    add(this.#counts, name, delta)
  }

  async #send(shared: SharedTally): Promise<void> {
    try {
      await this.#outgoing.sendWith(() => this.#take(), (id, deltas) => shared.add(id, deltas))
      this.#failing = false
    } catch (err) {
      this.#inDoubt(err)
    }
  }

  #take(): Tally | undefined {
    if (this.#counts.size === 0) return undefined
    const batch = this.#counts
    this.#counts = new Map()
    return batch
  }

  #inDoubt(err: unknown): void {
    // Once per outage, not once per flush, unless counts were dropped since.
    if (!this.#failing || this.#dropped > 0) {
      this.#log(JSON.stringify({ level: 'warn', msg: 'request metrics not flushed to Redis; the write is resent whole, with its id, at the next flush', held_fields: this.#counts.size, dropped_fields: this.#dropped, error: err instanceof Error ? err.message : String(err) }))
      this.#dropped = 0
    }
    this.#failing = true
  }
}
