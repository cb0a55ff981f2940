import { logLine, portFromEnv, runServerProcess } from '../server-process.ts'
import { startUpstashAdapter } from './server.ts'

/**
 * `tsx dev/upstash-adapter/main.ts`: the Upstash REST adapter as a process.
 * Env: `REDIS_URL` (default redis://127.0.0.1:6379), `UPSTASH_ADAPTER_TOKEN` (required),
 * `UPSTASH_ADAPTER_PORT` (default 0 = a free port). Logs JSON lines; the first one,
 * `{"msg":"listening","url":...}`, says where it listens. SIGINT/SIGTERM stop it.
 */
runServerProcess(async () => {
  const token = process.env.UPSTASH_ADAPTER_TOKEN ?? ''
  if (token === '') throw new Error('UPSTASH_ADAPTER_TOKEN is required')
  const port = portFromEnv('UPSTASH_ADAPTER_PORT')
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379'
  const adapter = await startUpstashAdapter({ redisUrl, token, port })
  logLine({ level: 'info', msg: 'listening', url: adapter.url, redis: new URL(redisUrl).host })
  return () => adapter.close()
})
