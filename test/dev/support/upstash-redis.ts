import { Redis } from '@upstash/redis'
import { startUpstashAdapter, type UpstashAdapter } from '../../../dev/upstash-adapter/server.ts'
import { startRedisServer, type RedisServer } from './redis-server.ts'

/** A throwaway redis-server behind the local Upstash REST adapter, and a test-side client on it. */
export interface UpstashRedis {
  redis: RedisServer
  adapter: UpstashAdapter
  /** `@upstash/redis` on the adapter: no retries or telemetry; values deserialized as the library does by default. */
  client: Redis
  stop(): Promise<void>
}

export const startUpstashRedis = async ({ token, commandTimeoutMs }: { token: string; commandTimeoutMs?: number }): Promise<UpstashRedis> => {
  const redis = await startRedisServer()
  const adapter = await startUpstashAdapter({ redisPort: redis.port, token, ...(commandTimeoutMs === undefined ? {} : { commandTimeoutMs }) })
  return {
    redis,
    adapter,
    client: new Redis({ url: adapter.url, token, retry: false, enableTelemetry: false }),
    async stop() {
      await adapter.close()
      await redis.stop()
    },
  }
}
