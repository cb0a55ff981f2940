import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { driftBaseline } from '../../../../backend/monitor/drift/baseline-file.ts'
import type { DriftCounts } from '../../../../backend/monitor/drift/counts.ts'
import { driftLayout } from '../../../../backend/monitor/drift/layout.ts'
import { DriftMonitor } from '../../../../backend/monitor/drift/monitor.ts'
import { createLogger } from '../../../../backend/logger.ts'
import { modelConfig } from '../../../../backend/repository/model-config.ts'
import { startUpstashAdapter, type UpstashAdapter } from '../../../../dev/upstash-adapter/server.ts'
import { CREDIT_WIDTH, applicantRows, creditRequest } from '../../support/applicants.ts'
import { post, startBackend, until, type BackendProcess } from '../../support/backend-process.ts'
import { DEMO_REPOSITORY } from '../../support/fixture-repository.ts'
import { startRedisServer, type RedisServer } from '../../../dev/support/redis-server.ts'

/**
 * Two real backend processes, one redis-server behind the Upstash adapter: each process's view
 * of a version's drift counts is the exact sum of the traffic both served. `fast` flushes
 * every 100 ms; `slow` never on its own within the test, so its counts reach Redis only
 * through its own reads and its shutdown.
 */

const TOKEN = 'drift-replicas-test-token-0123456789'
const MODEL = 'credit-risk'
const VERSION = 2

let redis: RedisServer
let adapter: UpstashAdapter
let fast: BackendProcess
let slow: BackendProcess

/** What both processes should report: the same requests counted in memory by the test. */
const config = modelConfig.parse(JSON.parse(readFileSync(join(DEMO_REPOSITORY, MODEL, 'config.json'), 'utf8')))
const baseline = driftBaseline.parse(JSON.parse(readFileSync(join(DEMO_REPOSITORY, MODEL, String(VERSION), 'baseline.json'), 'utf8')))
const tally = new DriftMonitor({ logger: createLogger('silent') }).counter(driftLayout(MODEL, VERSION, config, baseline))

interface InferBody {
  outputs: Array<{ name: string; data: number[] }>
}

/** Sends `count` applicants from `from` to a process and counts them in the tally too. */
const infer = async (backend: BackendProcess, count: number, from: number) => {
  const res = await post<InferBody>(`${backend.url}/v2/models/${MODEL}/versions/${VERSION}/infer`, creditRequest(count, from))
  expect(res.status).toBe(200)
  const probabilities = res.body.outputs.find((o) => o.name === 'probabilities')!.data
  tally.record(
    { features: { datatype: 'FP32', dims: [count, CREDIT_WIDTH], data: new Float32Array(applicantRows(count, from).flat()) } },
    count,
    { probabilities: { datatype: 'FP32', dims: [count, 2], data: new Float32Array(probabilities) } },
  )
  tally.request(0, count, false)
}

const view = async (backend: BackendProcess): Promise<DriftCounts> => {
  const res = await fetch(`${backend.url}/v2/models/${MODEL}/versions/${VERSION}/drift/counts?window=10m`)
  expect(res.status).toBe(200)
  return (await res.json()) as DriftCounts
}

/** Counts without what differs by when and how long: the window's minutes and the latency buckets. */
const comparable = ({ from_minute: _f, to_minute: _t, health: { latency_counts, ...health }, ...counts }: DriftCounts) => ({
  ...counts,
  health: { ...health, latencies: latency_counts.reduce((a, b) => a + b, 0) },
})

const expected = async () => {
  const counts = comparable(await tally.window(10))
  return { ...counts, health: { ...counts.health, latencies: counts.health.requests } }
}

beforeAll(async () => {
  redis = await startRedisServer()
  adapter = await startUpstashAdapter({ redisPort: redis.port, token: TOKEN })
  const env = { MODEL_REPOSITORY: 'models', UPSTASH_REDIS_REST_URL: adapter.url, UPSTASH_REDIS_REST_TOKEN: TOKEN }
  ;[fast, slow] = await Promise.all([
    startBackend({ ...env, DRIFT_FLUSH_MS: '100' }),
    startBackend({ ...env, DRIFT_FLUSH_MS: '3600000' }),
  ])
})

afterAll(async () => {
  await Promise.all([fast?.stop(), slow?.stop()])
  await adapter?.close()
  await redis?.stop()
})

describe('drift counts of two backend processes merged through Redis', () => {
  it('gives each process the exact sum of both', async () => {
    await infer(fast, 1, 0)
    await infer(fast, 32, 1)
    await infer(slow, 64, 33)
    await infer(fast, 7, 97)
    await infer(slow, 3, 104)
    const want = await expected()
    expect(want.rows).toBe(107)

    // slow's read sends its own counts; fast's arrive by its timer.
    await until(async () => JSON.stringify(comparable(await view(slow))) === JSON.stringify(want))
    expect(comparable(await view(fast))).toEqual(want)
    expect(comparable(await view(slow))).toEqual(want)
  })

  it('answers 400 for a bad window and 404 for a version it does not count', async () => {
    const counts = (path: string) => fetch(`${fast.url}/v2/models/${MODEL}/versions/${path}`)
    expect((await counts(`${VERSION}/drift/counts?window=181`)).status).toBe(400)
    expect((await counts('9/drift/counts')).status).toBe(404)
  })

  it('sends what a process counted since its last flush when it shuts down', async () => {
    await infer(slow, 20, 200)
    await infer(slow, 5, 300)
    expect(await slow.stop('SIGTERM')).toBe(0)
    const want = await expected()
    expect(want.rows).toBe(132)
    expect(comparable(await view(fast))).toEqual(want)
    expect([...fast.logs, ...slow.logs].filter((l) => String(l.msg).includes('drift'))).toEqual([])
  })
})
