import { Miniflare } from 'miniflare'
import { type RateLimitConfig, bundledWorkerOptions } from '../../dev/workerd.ts'

/**
 * Child process of `bench:edge`: runs the bundled edge worker in real workerd through Miniflare
 * (what `wrangler dev` runs underneath, without its dev proxy in front) on 127.0.0.1 and a free
 * port, then logs `{"msg":"listening","url":...}` like the backend so `startServer` can find it.
 * Started in a process group of its own: the benchmark's stop signal reaches workerd too.
 *
 * Env: EDGE_BUNDLE (path of worker.js), EDGE_BINDINGS (JSON object of string vars and secrets),
 * INSPECTOR_PORT (optional: workerd's V8 inspector, for a profile of the worker under load),
 * EDGE_RATELIMITS (optional JSON: `[[ratelimits]]` bindings by name in place of wrangler.toml's).
 */
const log = (entry: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(entry)}\n`)

const main = async () => {
  const bundle = process.env.EDGE_BUNDLE
  if (!bundle) throw new Error('EDGE_BUNDLE is not set')
  const bindings = JSON.parse(process.env.EDGE_BINDINGS ?? '{}') as Record<string, string>
  const mf = new Miniflare(await bundledWorkerOptions({
    bundle,
    bindings,
    ...(process.env.EDGE_RATELIMITS ? { ratelimits: JSON.parse(process.env.EDGE_RATELIMITS) as Record<string, RateLimitConfig> } : {}),
    host: '127.0.0.1',
    port: 0,
    ...(process.env.INSPECTOR_PORT ? { inspectorPort: Number(process.env.INSPECTOR_PORT) } : {}),
    // Only errors reach our stderr: a line per request would be measured with the worker.
    onLog: (level, message) => {
      if (level === 'error') process.stderr.write(`${message}\n`)
    },
  }))
  const url = (await mf.ready).toString().replace(/\/$/, '')
  let stopping = false
  const stop = () => {
    if (stopping) return
    stopping = true
    void mf.dispose().finally(() => process.exit(0))
    setTimeout(() => process.exit(0), 3_000).unref()
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  log({ level: 'info', msg: 'listening', url })
}

main().catch((err: unknown) => {
  log({ level: 'error', msg: 'workerd host failed', error: err instanceof Error ? err.message : String(err) })
  process.exit(1)
})
