import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import type { BackendStatsAnswer } from '../../../edge/console/backend-stats-shape.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { startUpstashAdapter, type UpstashAdapter } from '../../../dev/upstash-adapter/server.ts'
import { creditRequest } from '../../backend/support/applicants.ts'
import { post, startBackend, until, type BackendProcess } from '../../backend/support/backend-process.ts'
import { startRedisServer, type RedisServer } from '../../dev/support/redis-server.ts'

/**
 * Two real backend processes publishing their stats to one redis-server (behind the Upstash
 * adapter): the edge's `GET /v1/backend/stats` answers each pod as its own stats route counts it,
 * and their sum; a killed pod drops out once its snapshot expires (a 100 ms period here).
 */

const TOKEN = 'replica-stats-test-token-0123456789'
const MODEL = 'credit-risk'
let redis: RedisServer
let adapter: UpstashAdapter
let a: BackendProcess
let b: BackendProcess
const admin = generateApiKey('test')
let env: Record<string, string>
const app = createApp()

beforeAll(async () => {
  redis = await startRedisServer()
  adapter = await startUpstashAdapter({ redisPort: redis.port, token: TOKEN })
  const upstash = { UPSTASH_REDIS_REST_URL: adapter.url, UPSTASH_REDIS_REST_TOKEN: TOKEN }
  ;[a, b] = await Promise.all([
    startBackend({ MODEL_REPOSITORY: 'models', ...upstash, POD_NAME: 'pod-a', STATS_PUBLISH_MS: '100' }),
    startBackend({ MODEL_REPOSITORY: 'models', ...upstash, POD_NAME: 'pod-b', STATS_PUBLISH_MS: '100' }),
  ])
  env = {
    ...upstash,
    BACKEND_URL: a.url,
    API_KEYS: JSON.stringify([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 100_000 }]),
  }
})

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()])
  await adapter?.close()
  await redis?.stop()
})

const infer = async (backend: BackendProcess, rows: number, from: number) =>
  expect((await post(`${backend.url}/v2/models/${MODEL}/versions/2/infer`, creditRequest(rows, from))).status).toBe(200)

/** What a backend's own stats route counts of version 2: successes and rows batched. */
const own = async (backend: BackendProcess) => {
  const { model_stats } = (await (await fetch(`${backend.url}/v2/models/${MODEL}/versions/2/stats`)).json()) as { model_stats: Array<{ success: number; rows: number }> }
  return model_stats[0]
}

const stats = async (): Promise<BackendStatsAnswer> => {
  const res = await app.request('/v1/backend/stats', { headers: { 'x-api-key': admin } }, env)
  expect(res.status).toBe(200)
  return (await res.json()) as BackendStatsAnswer
}

const v2 = (s: { versions: BackendStatsAnswer['versions'] }) => s.versions.find((v) => v.model === MODEL && v.version === '2')

describe('GET /v1/backend/stats with every replica publishing to Redis', () => {
  it('answers each pod as it counts itself, and their sum', async () => {
    await infer(a, 3, 0)
    await infer(a, 5, 3)
    await infer(b, 7, 8)
    const [ownA, ownB] = [await own(a), await own(b)]
    expect(ownA.success).toBe(2)
    expect(ownB.success).toBe(1)
    const caughtUp = (s: BackendStatsAnswer) => {
      const pods = new Map(s.replicas.map((r) => [r.pod, v2(r)?.requests_by_status['200']]))
      return pods.get('pod-a') === ownA.success && pods.get('pod-b') === ownB.success
    }
    await until(async () => caughtUp(await stats()), { tries: 200, everyMs: 50 })
    const answer = await stats()
    expect(answer.source).toBe('redis')
    expect(answer.replicas.map((r) => r.pod).sort()).toEqual(['pod-a', 'pod-b'])
    const podA = v2(answer.replicas.find((r) => r.pod === 'pod-a')!)!
    const podB = v2(answer.replicas.find((r) => r.pod === 'pod-b')!)!
    expect(podA.batch_size.sum).toBe(ownA.rows)
    expect(podB.batch_size.sum).toBe(ownB.rows)
    const total = v2(answer)!
    expect(total.requests_by_status['200']).toBe(ownA.success + ownB.success)
    expect(total.batch_size.sum).toBe(ownA.rows + ownB.rows)
    expect(total.batch_size.count).toBe(podA.batch_size.count + podB.batch_size.count)
    expect(total.queue_capacity_rows).toBe(podA.queue_capacity_rows! + podB.queue_capacity_rows!)
    for (const bucket of total.batch_size.buckets) {
      const of = (v: typeof podA) => v.batch_size.buckets.find((x) => x.le === bucket.le)?.count ?? 0
      expect(bucket.count).toBe(of(podA) + of(podB))
    }
    expect(answer.ready).toBe(true)
  })

  it('leaves out a pod whose snapshot expired after it died', async () => {
    await b.stop('SIGKILL')
    await until(async () => (await stats()).replicas.every((r) => r.pod !== 'pod-b'), { tries: 200, everyMs: 50 })
    const answer = await stats()
    expect(answer.replicas.map((r) => r.pod)).toEqual(['pod-a'])
    expect(v2(answer)!.requests_by_status['200']).toBe((await own(a)).success)
  })
})
