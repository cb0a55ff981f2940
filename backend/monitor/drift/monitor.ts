import { errorFields, type Logger } from '../../logger.ts'
import type { ModelConfig } from '../../repository/model-config.ts'
import { readBaseline } from './baseline-file.ts'
import { OutgoingWrite } from '../../../shared/write-once.ts'
import { countsKey, type CountStore } from './count-store.ts'
import { DriftCounter, type Clock, type ObservedRows, type WindowTotals } from './counter.ts'
import { driftLayout, type DriftLayout } from './layout.ts'
import { MinuteBuckets, type UnsentMinute } from './minute-buckets.ts'

export interface DriftMonitorOptions {
  logger: Logger
  /** Replica merge through Redis; without it the counts stay in this process. */
  store?: CountStore
  /** How often the deltas go to Redis. */
  flushMs?: number
  now?: Clock
}

/**
 * Without Redis, how many observation ids (`DriftCounter.observe`) a process remembers: a resend
 * comes within seconds of its first attempt, far fewer observations than this later.
 */
export const OBSERVED_IDS_KEPT = 100_000

/** One flush: every counter's unsent minutes when it was taken. */
type Flush = Array<{ counter: DriftCounter; minute: UnsentMinute }>

/**
 * The drift counters of every version this process serves, and the flusher that merges them
 * across replicas. With a store, every `flushMs` the deltas since the last confirmed flush go
 * to Redis as one write with its own id (shared/write-once.ts). A flush that failed or timed out
 * may still land, so it is in doubt: the next flush sends it again whole, with the same id (a
 * no-op if it landed, before or after the resend), and only then what was counted since, as a
 * write of its own. Counts are neither lost nor added twice.
 *
 * With a store, `window()` flushes first and reads the window's hashes while no other flush
 * can run, then adds what this replica counted since: each count is in the sum exactly once.
 * The view holds this replica's counts up to now and the others' as of their last flush (at
 * most `flushMs` old); it fails when Redis cannot be reached rather than pass off one
 * replica's counts as everyone's.
 */
export class DriftMonitor {
  private readonly counters = new Map<string, DriftCounter>()
  private readonly logger: Logger
  private readonly store: CountStore | undefined
  private readonly flushMs: number
  private readonly now: Clock
  /** The flush in flight or in doubt: resent as it is until Redis answers it. */
  private readonly outgoing = new OutgoingWrite<Flush>('drift')
  /** Flushes and merged reads, one at a time. */
  private queue: Promise<unknown> = Promise.resolve()
  /** Calls to Redis that failed so far: a task that saw this change while it waited fails too. */
  private failures = 0
  /** Without Redis: the observation ids applied here, oldest first, at most OBSERVED_IDS_KEPT. */
  private readonly observedIds = new Set<string>()
  private timer: NodeJS.Timeout | undefined
  private ticking = false

  constructor({ logger, store, flushMs = 10_000, now = Date.now }: DriftMonitorOptions) {
    this.logger = logger
    this.store = store
    this.flushMs = flushMs
    this.now = now
  }

  /**
   * The counter of a version folder, shared by reloads with the same layout; undefined, and
   * nothing counted, when the version has no feature spec or baseline or they do not fit.
   */
  async open(model: string, version: number, config: ModelConfig, dir: string): Promise<DriftCounter | undefined> {
    if (!config.features) return undefined
    try {
      const baseline = await readBaseline(dir)
      return baseline && this.counter(driftLayout(model, version, config, baseline))
    } catch (err) {
      this.logger.warn('drift counting off for model version', { model, version, ...errorFields(err) })
      return undefined
    }
  }

  counter(layout: DriftLayout): DriftCounter {
    const key = `${layout.model}:${layout.version}:${layout.fingerprint}`
    let counter = this.counters.get(key)
    if (!counter) {
      const { model, version } = layout
      const onFault = (err: unknown) => this.logger.error('drift counting failed; the request was answered', { model, version, ...errorFields(err) })
      counter = new DriftCounter(layout, new MinuteBuckets(layout.size, this.store !== undefined), this.now, this.totals, onFault, this.observed)
      this.counters.set(key, counter)
    }
    return counter
  }

  /** Starts the periodic flush (nothing to do without a store). */
  start(): void {
    if (!this.store || this.timer) return
    this.timer = setInterval(() => {
      if (this.ticking) return
      this.ticking = true
      this.flush()
        .catch((err: unknown) => this.logger.warn('drift counts not flushed; kept for the next flush', errorFields(err)))
        .finally(() => (this.ticking = false))
    }, this.flushMs)
    this.timer.unref()
  }

  /** Sends the deltas not yet in Redis; rejects when Redis did not confirm them (they are kept). */
  flush(): Promise<void> {
    return this.exclusive(() => this.send())
  }

  /** Stops the timer and flushes once more: called after the last request was answered. */
  async close(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    try {
      await this.flush()
    } catch (err) {
      this.logger.error('drift counts lost at shutdown: the last flush failed', errorFields(err))
    }
  }

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const failuresBefore = this.failures
    // Behind a call that failed (a timeout, mostly), waiting out another budget would only make a
    // report of several windows wait one budget per window: fail alike, the next one tries again.
    const turn = async () => {
      if (this.failures !== failuresBefore) throw new Error('drift counts unreadable: Redis failed while this call waited its turn')
      return task().catch((err: unknown) => {
        this.failures++
        throw err
      })
    }
    const run = this.queue.then(turn, turn)
    this.queue = run.catch(() => undefined)
    return run
  }

  private async send(): Promise<void> {
    const store = this.store
    if (!store) return
    // The flush in doubt first (same id, same deltas), then one more with what was counted since.
    await this.outgoing.sendWith(() => this.unsent(), async (id, flush) => {
      await store.apply(id, flush.map(({ counter, minute }) => ({ key: countsKey(counter.layout, minute.minute), ...minute })))
      for (const { counter, minute } of flush) counter.buckets.markSent(minute)
    })
  }

  private unsent(): Flush | undefined {
    const flush = [...this.counters.values()].flatMap((counter) => counter.buckets.unsent().map((minute) => ({ counter, minute })))
    return flush.length > 0 ? flush : undefined
  }

  /**
   * An observation's counts, once per id: with Redis, applied straight to the minute's hash in
   * one write whose id is the observation's (shared/write-once.ts), so a resend is a no-op
   * whichever replica it reaches; without, checked against the ids this process remembers.
   */
  private readonly observed: ObservedRows = async (counter, id, minute, counts) => {
    const store = this.store
    if (!store) {
      if (this.observedIds.has(id)) return
      this.observedIds.add(id)
      for (const oldest of this.observedIds) {
        if (this.observedIds.size <= OBSERVED_IDS_KEPT) break
        this.observedIds.delete(oldest)
      }
      const into = counter.buckets.at(minute)
      for (let i = 0; i < counts.length; i++) into[i] += counts[i]
      return
    }
    const indices: number[] = []
    const deltas: number[] = []
    counts.forEach((count, i) => {
      if (count === 0) return
      indices.push(i)
      deltas.push(count)
    })
    const { model, version } = counter.layout
    await store.apply(`observe:${model}:${version}:${id}`, [{ key: countsKey(counter.layout, minute), indices, deltas }])
  }

  private readonly totals: WindowTotals = (counter, from, to) => {
    const total = new Float64Array(counter.layout.size)
    const store = this.store
    if (!store) {
      counter.buckets.addTo(total, from, to, false)
      return Promise.resolve(total)
    }
    return this.exclusive(async () => {
      await this.send()
      const keys = Array.from({ length: to - from + 1 }, (_, i) => countsKey(counter.layout, from + i))
      for (const hash of await store.read(keys)) {
        for (const [index, count] of hash) if (index < total.length) total[index] += count
      }
      counter.buckets.addTo(total, from, to, true)
      return total
    })
  }
}
