import { readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { convertV4MiniflareOptions, type MiniflareOptions } from 'miniflare'
import { unstable_readConfig } from 'wrangler'

const WRANGLER_TOML = fileURLToPath(new URL('../wrangler.toml', import.meta.url))

export interface BundledWorkerOptions {
  /** Path of the bundle's entry module (`worker.js` from `wrangler deploy --dry-run --outdir`). */
  bundle: string
  /** Vars and secrets, as strings (what a Worker's `env` holds for them). */
  bindings: Record<string, string>
  host?: string
  port?: number
  /** workerd's V8 inspector (Chrome DevTools protocol), for profiling; off unset. */
  inspectorPort?: number
  /** Each line the worker logs (console.*), with its level; unset, Miniflare prints them. */
  onLog?: (level: string, message: string) => void
  /** `[[ratelimits]]` bindings by name, in place of wrangler.toml's (Miniflare simulates them in workerd). */
  ratelimits?: Record<string, RateLimitConfig>
}

/** One `[[ratelimits]]` binding as wrangler.toml declares it. */
export interface RateLimitConfig {
  namespace_id: string
  simple: { limit: number; period: 10 | 60 }
}

/** wrangler.toml's compatibility date and flags, and its `[[ratelimits]]`: what every local run of the worker takes from it. */
export const wranglerConfig = () => {
  const config = unstable_readConfig({ config: WRANGLER_TOML })
  if (!config.compatibility_date) throw new Error(`${WRANGLER_TOML} names no compatibility_date`)
  return { compatibilityDate: config.compatibility_date, compatibilityFlags: config.compatibility_flags, ratelimits: config.ratelimits }
}

/**
 * Miniflare options that run a wrangler-built bundle in workerd the way a deploy runs it: the
 * compatibility date and flags come from wrangler.toml, never a copy. Miniflare 5 (the one
 * wrangler ships) takes a list of workers, and simulates the `[[ratelimits]]` bindings; `convertV4MiniflareOptions` builds it from the
 * single-worker form and keeps the dev registry off, so parallel test workers never find each other.
 */
export const bundledWorkerOptions = async ({ bundle, bindings, onLog, ratelimits, ...shared }: BundledWorkerOptions): Promise<MiniflareOptions> => {
  const config = wranglerConfig()
  return convertV4MiniflareOptions({
    ...shared,
    ...(onLog && { handleStructuredLogs: ({ level, message }: { level: string; message: string }) => onLog(level, message) }),
    modules: [{ type: 'ESModule', path: bundle, contents: await readFile(bundle, 'utf8') }],
    modulesRoot: dirname(bundle),
    compatibilityDate: config.compatibilityDate,
    compatibilityFlags: config.compatibilityFlags,
    bindings,
    ratelimits: ratelimits ?? Object.fromEntries((config.ratelimits as Array<RateLimitConfig & { name: string }>).map(({ name, namespace_id, simple }) => [name, { namespace_id, simple }])),
  })
}
