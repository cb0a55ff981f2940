import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { handler, lambdaManager, shutdownLambda } from '../../backend/lambda.ts'
import { until } from './support/backend-process.ts'
import { startUpstashRedis, type UpstashRedis } from '../dev/support/upstash-redis.ts'
import { setProcessEnv } from '../support/process-env.ts'
import { DEMO_REPOSITORY } from './support/fixture-repository.ts'
import { creditRequest } from './support/applicants.ts'

/**
 * The Lambda tier's drift flush at the end of each invoke, against a real redis-server behind the
 * Upstash adapter: an invoke whose flush Redis does not confirm still answers, and the next invoke
 * resends that flush under its id, so every row is in Redis exactly once whether or not the flush
 * in doubt landed after Redis resumed.
 */

const TOKEN = 'lambda-drift-test-token-0123456789'
let upstash: UpstashRedis
let restoreEnv: (() => void) | undefined

beforeAll(async () => {
  upstash = await startUpstashRedis({ token: TOKEN })
  restoreEnv = setProcessEnv({
    MODEL_REPOSITORY: DEMO_REPOSITORY,
    LOG_LEVEL: 'silent',
    UPSTASH_REDIS_REST_URL: upstash.adapter.url,
    UPSTASH_REDIS_REST_TOKEN: TOKEN,
    DRIFT_REDIS_TIMEOUT_MS: '300',
  })
})

afterAll(async () => {
  await shutdownLambda()
  restoreEnv?.()
  await upstash?.stop()
})

/** Rows of credit-risk v2 in Redis: the layout's row count summed over every minute hash (SCAN, never KEYS). */
const rowsInRedis = async (): Promise<number> => {
  const counter = (await lambdaManager().resolve('credit-risk', '2')).drift!
  const keys: string[] = []
  let cursor: string | number = '0'
  do {
    const [next, batch] = (await upstash.client.scan(cursor, { match: `drift:credit-risk:2:${counter.layout.fingerprint}:*`, count: 100 })) as [string | number, string[]]
    keys.push(...batch)
    cursor = next
  } while (String(cursor) !== '0')
  let rows = 0
  for (const key of keys) rows += Number((await upstash.client.hget(key, String(counter.layout.rows))) ?? 0)
  return rows
}

const invoke = (rows: number) => handler({ model_name: 'credit-risk', model_version: '2', ...creditRequest(rows) })

describe('the Lambda tier merges its drift counts through Redis at the end of each invoke', () => {
  it('has them in Redis when the invoke answers, and exactly once across a flush in doubt', async () => {
    expect(await invoke(3)).toMatchObject({ model_version: '2' })
    expect(await rowsInRedis()).toBe(3)

    upstash.redis.signal('SIGSTOP')
    try {
      // Its flush times out (DRIFT_REDIS_TIMEOUT_MS): in doubt, kept, and the answer still goes out.
      expect(await invoke(4)).toMatchObject({ model_version: '2' })
    } finally {
      upstash.redis.signal('SIGCONT')
    }
    await until(() => upstash.client.ping().then(() => true, () => false))

    // The flush in doubt may have landed on resume; the next invoke resends it under its id, then its own rows.
    expect(await invoke(5)).toMatchObject({ model_version: '2' })
    expect(await rowsInRedis()).toBe(12)
  })
})
