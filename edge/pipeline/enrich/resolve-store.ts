import type { Context } from 'hono'
import demoFeatures from './demo-seed.json' with { type: 'json' }
import type { AppEnv, Bindings } from '../../env.ts'
import { CachedFeatureStore, type CachedFeatureStoreOptions } from './cached-store.ts'
import type { FeatureStore } from './feature-store.ts'
import { type FeatureSeed, MemoryFeatureStore } from './memory-store.ts'
import { UpstashFeatureStore } from './upstash-store.ts'

/** The embedded default when no Redis is configured (local dev): a handful of demo users, `demo-seed.json`. */
export const DEFAULT_FEATURE_SEED: FeatureSeed = demoFeatures

export const DEFAULT_FEATURE_TIMEOUT_MS = 25

/** `FEATURE_TIMEOUT_MS` as a positive number of milliseconds, else the default. */
export const featureTimeoutMs = (env: Partial<Bindings> | undefined): number => {
  const raw = env?.FEATURE_TIMEOUT_MS?.trim()
  const n = raw ? Number(raw) : NaN
  return Number.isFinite(n) && n > 0 ? n : DEFAULT_FEATURE_TIMEOUT_MS
}

export interface FeatureStoreResolverOptions {
  /** Cache, breaker and clock options (the time budget comes from `FEATURE_TIMEOUT_MS`). */
  cache?: Omit<CachedFeatureStoreOptions, 'timeoutMs'>
  /** Builds the backing store from the bindings (default: Upstash when configured, else memory). */
  storeFor?: (env: Partial<Bindings>, seed: FeatureSeed) => FeatureStore
}

/** Upstash when both `UPSTASH_REDIS_REST_URL` and `_TOKEN` are set, else the seeded memory store. */
export const createFeatureStore = (env: Partial<Bindings>, seed: FeatureSeed): FeatureStore =>
  env.UPSTASH_REDIS_REST_URL && env.UPSTASH_REDIS_REST_TOKEN
    ? new UpstashFeatureStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN })
    : new MemoryFeatureStore(seed)

/**
 * `(c) => CachedFeatureStore` for the enrich middleware. Bindings arrive with each request, but
 * the cache and the breaker must live as long as the isolate: one store is built per distinct
 * configuration (URL, token, budget) and reused by every request.
 */
export const featureStoreResolver = (
  seed: FeatureSeed = DEFAULT_FEATURE_SEED,
  { cache = {}, storeFor = createFeatureStore }: FeatureStoreResolverOptions = {},
): ((c: Context<AppEnv>) => CachedFeatureStore) => {
  let built: { key: string; store: CachedFeatureStore } | undefined
  return (c) => {
    const env: Partial<Bindings> = c.env ?? {}
    const timeoutMs = featureTimeoutMs(env)
    const key = `${env.UPSTASH_REDIS_REST_URL ?? ''}\u0000${env.UPSTASH_REDIS_REST_TOKEN ?? ''}\u0000${timeoutMs}`
    if (built?.key !== key) built = { key, store: new CachedFeatureStore(storeFor(env, seed), { ...cache, timeoutMs }) }
    return built.store
  }
}
