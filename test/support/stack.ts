import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { startBackend, type BackendProcess } from '../backend/support/backend-process.ts'
import { startUpstashRedis, type UpstashRedis } from '../dev/support/upstash-redis.ts'
import { startWorker, type RunningWorker } from '../edge/support/workerd.ts'
import type { RateLimitConfig } from '../../dev/workerd.ts'

/**
 * The real parts, brought up the one way the suites need them: a throwaway redis-server behind
 * the local Upstash REST adapter, the backend as a child process, and the worker bundled as
 * deployed in workerd in front of it, each pointed at the others. Every part started is stopped by
 * `stop()`, also when a later part fails to start.
 */

/** An API key the worker is given: generated here, handed back under `keys[name]`. */
export interface StackKey {
  name: string
  scopes: string[]
  tenant?: string
  /** Default 100,000 (unless `rate_limit` names a binding): a suite's own traffic never meets the limiter unless it asks to. */
  rate_limit_per_minute?: number
  /** A `[[ratelimits]]` binding that limits the key instead (see `StackOptions.ratelimits`). */
  rate_limit?: string
}

export interface RedisOptions {
  token: string
  commandTimeoutMs?: number
  /** Whether the backend counts drift into it (default true). */
  backend?: boolean
  /** Whether the worker is given it, for features, limits, keys and rollouts (default true). */
  worker?: boolean
}

export interface StackOptions {
  /** A redis-server behind the Upstash adapter; none unless given. */
  redis?: RedisOptions
  /** The backend's environment, over MODEL_REPOSITORY=models (and the Upstash variables). */
  backend?: Record<string, string>
  /** The worker's bindings, over BACKEND_URL, API_KEYS (from `keys`) and the Upstash variables; `false` starts no worker. */
  worker?: Record<string, string> | false
  /**
   * A hop the suite puts between the worker and the backend (a stalling proxy): started with the
   * backend's URL, it gives the URL the worker calls; `stop()` closes it after the worker, before the backend.
   */
  between?: (backendUrl: string) => Promise<{ url: string; close(): Promise<unknown> }>
  /** Default: `web` with the predict scope and `ops` with the admin scope. */
  keys?: StackKey[]
  /** The worker's `[[ratelimits]]` bindings (simulated by Miniflare) in place of wrangler.toml's. */
  ratelimits?: Record<string, RateLimitConfig>
}

export interface Stack {
  upstash: UpstashRedis | undefined
  backend: BackendProcess
  /** Set unless `worker: false`. */
  worker: RunningWorker
  /** Each key by its name. */
  keys: Record<string, string>
  /** The API_KEYS binding the worker was given (JSON). */
  apiKeys: string
  stop(): Promise<void>
}

export const DEFAULT_KEYS: StackKey[] = [
  { name: 'web', scopes: ['predict'] },
  { name: 'ops', scopes: ['admin'] },
]

/** The rollout suites' keys: an app with the predict scope and an operator, neither ever rate limited. */
export const ROLLOUT_KEYS: StackKey[] = [
  { name: 'app', scopes: ['predict'], rate_limit_per_minute: 1_000_000 },
  { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 1_000_000 },
]

/** Controller bindings that step on every tick (no dwell, one clean window, ten requests), so a suite moves a canary without waiting minutes. */
export const STEP_EVERY_TICK = { CONTROLLER_DWELL_MINUTES: '0', CONTROLLER_CLEAN_WINDOWS: '1', CONTROLLER_MIN_REQUESTS: '10' }

const upstashEnv = (upstash: UpstashRedis, token: string) => ({ UPSTASH_REDIS_REST_URL: upstash.adapter.url, UPSTASH_REDIS_REST_TOKEN: token })

export function startStack(options: StackOptions & { redis: RedisOptions }): Promise<Stack & { upstash: UpstashRedis }>
export function startStack(options?: StackOptions): Promise<Stack>
export async function startStack({ redis, backend: backendEnv = {}, worker: bindings = {}, between, keys = DEFAULT_KEYS, ratelimits }: StackOptions = {}): Promise<Stack> {
  const stops: Array<() => Promise<unknown>> = []
  const stop = async () => {
    for (const stopPart of stops.splice(0).reverse()) await stopPart()
  }
  try {
    const upstash = redis ? await startUpstashRedis({ token: redis.token, ...(redis.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: redis.commandTimeoutMs }) }) : undefined
    if (upstash) stops.push(() => upstash.stop())
    const redisFor = (part: 'backend' | 'worker') => (upstash && redis && redis[part] !== false ? upstashEnv(upstash, redis.token) : {})

    const backend = await startBackend({ MODEL_REPOSITORY: 'models', ...redisFor('backend'), ...backendEnv })
    stops.push(() => backend.stop())

    const generated = Object.fromEntries(keys.map((k) => [k.name, generateApiKey('test')]))
    const apiKeys = JSON.stringify(await Promise.all(keys.map(async ({ rate_limit_per_minute = 100_000, ...k }) => ({ ...k, hash: await hashApiKey(generated[k.name]!), ...(k.rate_limit === undefined ? { rate_limit_per_minute } : {}) }))))
    let worker: RunningWorker | undefined
    if (bindings !== false) {
      const hop = between ? await between(backend.url) : undefined
      if (hop) stops.push(() => hop.close())
      const started = await startWorker({ BACKEND_URL: hop?.url ?? backend.url, API_KEYS: apiKeys, ...redisFor('worker'), ...bindings }, ratelimits && { ratelimits })
      stops.push(() => started.dispose())
      worker = started
    }
    return {
      upstash,
      backend,
      // Read only by suites that started one; a suite that asked for none never reaches it.
      worker: worker as RunningWorker,
      keys: generated,
      apiKeys,
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}

export interface EdgeOverBackend {
  backend: BackendProcess
  worker: RunningWorker
  /** A key with the predict scope and one with the admin scope. */
  keys: { predict: string; admin: string }
  stop(): Promise<void>
}

/** The real backend (with `backendEnv`) and the bundled worker in workerd in front of it, with a predict key and an admin key. */
export const startEdgeOverBackend = async (backendEnv: Record<string, string>): Promise<EdgeOverBackend> => {
  const { backend, worker, keys, stop } = await startStack({
    backend: backendEnv,
    keys: [{ name: 'web', scopes: ['predict'], rate_limit_per_minute: 6_000 }, { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 600 }],
  })
  return { backend, worker, keys: { predict: keys.web!, admin: keys.ops! }, stop }
}
