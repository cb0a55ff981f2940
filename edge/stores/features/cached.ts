import { CircuitBreaker } from '../../backend-client/circuit-breaker.ts'
import { featureKey, type FeatureStore, type StoredFeatures } from './feature-store.ts'

/**
 * Where a read's values came from: a fresh cache entry, the store just now, an expired cache
 * entry served because the store failed (stale-if-error), or nowhere (store failed, nothing cached).
 */
export type FeatureSource = 'cache' | 'store' | 'stale' | 'none'

export interface FeatureRead {
  /** The entity's stored values; empty when it has no hash or nothing could be read. */
  values: StoredFeatures
  /** Whether these values are the entity's hash (false: unknown entity, or nothing could be read). */
  found: boolean
  source: FeatureSource
  /** The store failed, timed out or was not asked (circuit open): values are stale or absent. */
  degraded: boolean
}

/** What the enrich middleware reads through. */
export interface FeatureReader {
  read(entity: string, id: string): Promise<FeatureRead>
}

/** Starts a timer and returns its cancel function (injectable so tests need no wall clock). */
export type SetTimer = (fn: () => void, ms: number) => () => void

export interface CachedFeatureStoreOptions {
  /** Most entities kept in the isolate (least recently used go first; default 10,000). */
  maxEntries?: number
  /** How long a read value is fresh (default 60 s). */
  ttlMs?: number
  /** How long "this entity has no features" is fresh (default 10 s). */
  missTtlMs?: number
  /** How long after expiry an entry may still be served when the store fails (default 15 min). */
  maxStaleMs?: number
  /** Time budget of one store read; slower counts as a failure (default 25 ms; ≤ 0 or Infinity: none). */
  timeoutMs?: number
  /** Opens after consecutive failures so an outage is not hammered (default: 5 failures, 5 s). */
  breaker?: CircuitBreaker
  now?: () => number
  setTimer?: SetTimer
}

export interface FeatureCacheStats {
  size: number
  hits: number
  /** Reads that went to the store and got an answer in time. */
  loads: number
  stale: number
  /** Reads answered with nothing because the store failed and nothing usable was cached. */
  none: number
  timeouts: number
  errors: number
  /** Reads that did not ask the store because the circuit was open. */
  shortCircuited: number
}

interface Entry {
  values: StoredFeatures | undefined
  expiresAt: number
  staleUntil: number
}

type Load = { ok: true; values: StoredFeatures | undefined } | { ok: false }

const EMPTY: StoredFeatures = Object.freeze({}) as StoredFeatures

const defaultSetTimer: SetTimer = (fn, ms) => {
  const timer = setTimeout(fn, ms)
  return () => clearTimeout(timer)
}

/**
 * An in-isolate LRU + TTL cache in front of a FeatureStore, with stale-if-error, a time budget
 * per store read and a circuit breaker. It never rejects: a failing store shows as
 * `degraded: true` with stale values (`source: 'stale'`) or none (`source: 'none'`).
 * A store answer that arrives after the budget still refreshes the cache for later requests.
 */
export class CachedFeatureStore implements FeatureReader {
  readonly breaker: CircuitBreaker
  private readonly entries = new Map<string, Entry>()
  private readonly maxEntries: number
  private readonly ttlMs: number
  private readonly missTtlMs: number
  private readonly maxStaleMs: number
  private readonly timeoutMs: number
  private readonly now: () => number
  private readonly setTimer: SetTimer
  private readonly counts = { hits: 0, loads: 0, stale: 0, none: 0, timeouts: 0, errors: 0, shortCircuited: 0 }

  constructor(
    private readonly store: FeatureStore,
    {
      maxEntries = 10_000,
      ttlMs = 60_000,
      missTtlMs = 10_000,
      maxStaleMs = 15 * 60_000,
      timeoutMs = 25,
      now = Date.now,
      setTimer = defaultSetTimer,
      breaker = new CircuitBreaker({ failureThreshold: 5, cooldownMs: 5_000, now }),
    }: CachedFeatureStoreOptions = {},
  ) {
    if (!(maxEntries >= 1)) throw new RangeError('maxEntries must be at least 1')
    this.maxEntries = Math.floor(maxEntries)
    this.ttlMs = ttlMs
    this.missTtlMs = missTtlMs
    this.maxStaleMs = maxStaleMs
    this.timeoutMs = timeoutMs
    this.now = now
    this.setTimer = setTimer
    this.breaker = breaker
  }

  async read(entity: string, id: string): Promise<FeatureRead> {
    const key = featureKey(entity, id)
    const entry = this.entries.get(key)
    if (entry && this.now() < entry.expiresAt) {
      this.touch(key, entry)
      this.counts.hits++
      return answer(entry.values, 'cache', false)
    }
    const loaded = await this.load(key, entity, id)
    if (loaded.ok) {
      this.counts.loads++
      return answer(loaded.values, 'store', false)
    }
    // Stale-if-error: an expired entry still within maxStaleMs beats the defaults.
    if (entry && this.entries.get(key) === entry && this.now() < entry.staleUntil) {
      this.touch(key, entry)
      this.counts.stale++
      return answer(entry.values, 'stale', true)
    }
    this.counts.none++
    return { values: EMPTY, found: false, source: 'none', degraded: true }
  }

  /** Drops one entity's cached values (e.g. after writing new ones). */
  invalidate(entity: string, id: string): void {
    this.entries.delete(featureKey(entity, id))
  }

  clear(): void {
    this.entries.clear()
  }

  stats(): FeatureCacheStats {
    return { size: this.entries.size, ...this.counts }
  }

  private load(key: string, entity: string, id: string): Promise<Load> {
    if (!this.breaker.allow()) {
      this.counts.shortCircuited++
      return Promise.resolve({ ok: false })
    }
    return new Promise<Load>((resolve) => {
      let settled = false
      const cancel =
        Number.isFinite(this.timeoutMs) && this.timeoutMs > 0
          ? this.setTimer(() => {
              if (settled) return
              settled = true
              this.counts.timeouts++
              this.breaker.failure()
              resolve({ ok: false })
            }, this.timeoutMs)
          : () => {}
      let reading: Promise<StoredFeatures | undefined>
      try {
        reading = this.store.read(entity, id)
      } catch (error) {
        reading = Promise.reject(error)
      }
      reading.then(
        (answered) => {
          // Late answers still refresh the cache; only an answer in time closes the breaker.
          const values = this.put(key, answered)
          if (settled) return
          settled = true
          cancel()
          this.breaker.success()
          resolve({ ok: true, values })
        },
        () => {
          if (settled) return
          settled = true
          cancel()
          this.counts.errors++
          this.breaker.failure()
          resolve({ ok: false })
        },
      )
    })
  }

  /** Caches a store answer (a frozen copy, shared by every later reader) and returns it. */
  private put(key: string, answered: StoredFeatures | undefined): StoredFeatures | undefined {
    const values = answered === undefined ? undefined : Object.freeze({ ...answered })
    const expiresAt = this.now() + (values === undefined ? this.missTtlMs : this.ttlMs)
    this.entries.delete(key)
    this.entries.set(key, { values, expiresAt, staleUntil: expiresAt + this.maxStaleMs })
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string
      this.entries.delete(oldest)
    }
    return values
  }

  private touch(key: string, entry: Entry): void {
    this.entries.delete(key)
    this.entries.set(key, entry)
  }
}

const answer = (values: StoredFeatures | undefined, source: FeatureSource, degraded: boolean): FeatureRead =>
  values === undefined ? { values: EMPTY, found: false, source, degraded } : { values, found: true, source, degraded }
