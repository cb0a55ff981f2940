import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, beforeEach } from 'vitest'
import { startUpstashRedis, type UpstashRedis } from '../../dev/support/upstash-redis.ts'
import { startLateReplies, type LateReplies } from './late-replies.ts'

export interface LateRedis {
  /** The real redis-server behind the Upstash adapter (`store.client` reads it directly). */
  store: UpstashRedis
  /** The proxy in front of the adapter that holds replies (`late.holdMs`). */
  late: LateReplies
  /** A client on the proxy, built as the edge's isolate builds its own. */
  viaProxy(): Redis
}

/**
 * For a test file: a real redis-server behind the Upstash adapter and the late-replies proxy,
 * started once, emptied and with replies passed through before each test, stopped after all.
 */
export const useLateRedis = (token: string): LateRedis => {
  const ctx = { viaProxy: () => new Redis({ url: ctx.late.url, token, retry: false, enableTelemetry: false }) } as LateRedis
  beforeAll(async () => {
    ctx.store = await startUpstashRedis({ token })
    ctx.late = await startLateReplies(ctx.store.adapter.url)
  })
  afterAll(async () => {
    await ctx.late?.close()
    await ctx.store?.stop()
  })
  beforeEach(async () => {
    ctx.late.holdMs = () => 0
    ctx.late.forwardAfterMs = () => 0
    await ctx.store.client.flushall()
  })
  return ctx
}

/** Polls `read` until it gives `want` or `ms` pass (a bound for a loaded machine, not a timing claim). */
export const eventually = async <T>(read: () => Promise<T>, want: T, ms = 5_000): Promise<T> => {
  const stopAt = Date.now() + ms
  let value = await read()
  while (value !== want && Date.now() < stopAt) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    value = await read()
  }
  return value
}
