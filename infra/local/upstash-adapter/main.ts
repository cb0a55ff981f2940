import { startUpstashAdapter } from './server.ts'

/**
 * `tsx infra/local/upstash-adapter/main.ts`: the Upstash REST adapter as a process.
 * Env: `REDIS_URL` (default redis://127.0.0.1:6379), `UPSTASH_ADAPTER_TOKEN` (required),
 * `UPSTASH_ADAPTER_PORT` (default 0 = a free port). Logs JSON lines; the first one,
 * `{"msg":"listening","url":...}`, says where it listens. SIGINT/SIGTERM stop it.
 */
const log = (entry: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...entry })}\n`)
}

const main = async (): Promise<void> => {
  const token = process.env.UPSTASH_ADAPTER_TOKEN ?? ''
  if (token === '') throw new Error('UPSTASH_ADAPTER_TOKEN is required')
  const portText = process.env.UPSTASH_ADAPTER_PORT ?? '0'
  const port = Number(portText)
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`UPSTASH_ADAPTER_PORT ${JSON.stringify(portText)} is not a port`)
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379'

  const adapter = await startUpstashAdapter({ redisUrl, token, port })
  log({ level: 'info', msg: 'listening', url: adapter.url, redis: new URL(redisUrl).host })

  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    log({ level: 'info', msg: 'stopping', signal })
    adapter.close().then(() => process.exit(0), () => process.exit(1))
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
}

main().catch((error: unknown) => {
  log({ level: 'error', msg: 'failed to start', error: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})
