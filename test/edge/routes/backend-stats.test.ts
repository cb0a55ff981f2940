import { createServer as createHttpServer } from 'node:http'
import { createServer, type Server, type Socket } from 'node:net'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { backendStatsOf, sumBackendStats } from '../../../edge/console/backend-stats.ts'
import { backendStats } from '../../../edge/routes/backend-stats.ts'
import type { BackendStatsAnswer } from '../../../edge/console/backend-stats-shape.ts'
import type { AppEnv } from '../../../edge/app.ts'
import { onError } from '../../../edge/on-error.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { demoApplicant } from '../../../dev/demo-applicant.ts'
import { parsePrometheusText } from '../../../shared/prometheus-text.ts'
import { startBackend, type BackendProcess } from '../../backend/support/backend-process.ts'

/** `GET /v1/backend/stats` against the real backend, and against one that never answers. */

const INFER_TOKEN = 'stats-test-infer-token-0123456789'
let backend: BackendProcess
const admin = generateApiKey('test')
const client = generateApiKey('test')
let env: Record<string, string>
const app = createApp()

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models', INFER_TOKEN })
  env = {
    BACKEND_URL: backend.url,
    INFER_TOKEN,
    API_KEYS: JSON.stringify([
      { name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 1_000 },
      { name: 'app', hash: await hashApiKey(client), scopes: ['predict'], rate_limit_per_minute: 1_000 },
    ]),
  }
})

afterAll(async () => {
  await backend?.stop()
})

const predict = (rows: number) =>
  app.request('/v1/models/credit-risk/predict', {
    method: 'POST',
    headers: { 'x-api-key': client, 'content-type': 'application/json' },
    body: JSON.stringify({ instances: Array.from({ length: rows }, (_, i) => demoApplicant(i)), entity: { user_id: 'u-1' } }),
  }, env)

describe('GET /v1/backend/stats', () => {
  it('gives each served version\'s provider, queue, requests and batches as the backend counts them', async () => {
    for (const rows of [1, 3, 5]) expect((await predict(rows)).status).toBe(200)
    const res = await app.request('/v1/backend/stats', { headers: { 'x-api-key': admin } }, env)
    expect(res.status).toBe(200)
    const stats = (await res.json()) as BackendStatsAnswer
    // Without Redis: the one replica BACKEND_URL reaches, said so, and its sum is itself.
    expect(stats.source).toBe('backend_url')
    expect(stats.replicas).toHaveLength(1)
    const { pod, published_at, ...replica } = stats.replicas[0]
    expect([pod, published_at]).toEqual([null, null])
    expect(replica).toEqual({ fetched_at: stats.fetched_at, ready: stats.ready, versions: stats.versions, rejections: stats.rejections })
    const own = (await (await fetch(`${backend.url}/v2/models/credit-risk/versions/2/stats`, { headers: { authorization: `Bearer ${INFER_TOKEN}` } })).json()) as { model_stats: Array<{ execution_provider: string; queue_depth_rows: number; success: number; batches: number; rows: number }> }
    const [expected] = own.model_stats
    const v2 = stats.versions.find((v) => v.model === 'credit-risk' && v.version === '2')!
    expect(stats.ready).toBe(true)
    expect(v2.execution_provider).toBe(expected.execution_provider)
    expect(v2.queue_depth_rows).toBe(expected.queue_depth_rows)
    expect(v2.queue_capacity_rows).toBeGreaterThan(0)
    expect(v2.requests_by_status['200']).toBe(expected.success)
    const batches = Object.values(v2.batches_by_reason).reduce((a, b) => a + b, 0)
    expect(batches).toBe(expected.batches)
    expect(v2.batch_size.count).toBe(expected.batches)
    expect(v2.batch_size.sum).toBe(expected.rows)
    expect(v2.batch_size.buckets.reduce((n, b) => n + b.count, 0)).toBe(expected.batches)
  })

  it('is for admin keys only', async () => {
    expect((await app.request('/v1/backend/stats', {}, env)).status).toBe(401)
    expect((await app.request('/v1/backend/stats', { headers: { 'x-api-key': client } }, env)).status).toBe(403)
  })

  it('answers 503 within its bound when the backend accepts the connection and never answers', async () => {
    const sockets = new Set<Socket>()
    const silent: Server = createServer((socket) => sockets.add(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const { port } = silent.address() as { port: number }
    const bounded = new Hono<AppEnv>()
      .use((c, next) => (c.set('requestId', 'stats-test'), next()))
      .get('/v1/backend/stats', backendStats({ timeoutMs: 200 }))
      .onError(onError)
    try {
      const res = await bounded.request('/v1/backend/stats', {}, { BACKEND_URL: `http://127.0.0.1:${port}` })
      expect(res.status).toBe(503)
      expect(((await res.json()) as { type: string }).type).toBe('https://edge-infer.dev/problems/backend-stats-unavailable')
      expect(sockets.size).toBe(1)
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })

  it('answers 502 when what answers at the backend\'s /metrics is not Prometheus text', async () => {
    const html = createHttpServer((_, res) => res.end('<html><body>sign in</body></html>\n'))
    await new Promise<void>((resolve) => html.listen(0, '127.0.0.1', resolve))
    const { port } = html.address() as { port: number }
    const route = new Hono<AppEnv>()
      .use((c, next) => (c.set('requestId', 'stats-test'), next()))
      .get('/v1/backend/stats', backendStats())
      .onError(onError)
    try {
      const res = await route.request('/v1/backend/stats', {}, { BACKEND_URL: `http://127.0.0.1:${port}` })
      expect(res.status).toBe(502)
      const problem = (await res.json()) as { type: string; detail: string }
      expect(problem.type).toBe('https://edge-infer.dev/problems/backend-stats-unavailable')
      expect(problem.detail).toBe('the inference tier\'s metrics are not Prometheus text')
    } finally {
      await new Promise((resolve) => html.close(resolve))
    }
  })
})

describe('the backend\'s metrics, as the console reads them', () => {
  it('names each refusal with the status its caller got, and turns cumulative buckets into counts', () => {
    const text = [
      '# HELP edge_infer_backend_rejected_requests_total Requests refused or dropped, by reason',
      'edge_infer_backend_rejected_requests_total{model="m",reason="queue_full"} 4',
      'edge_infer_backend_rejected_requests_total{model="m",reason="expired"} 2',
      'edge_infer_backend_rejected_requests_total{model="m",reason="something_new"} 1',
      'edge_infer_backend_batch_size_rows_bucket{le="1",model="m",version="1"} 2',
      'edge_infer_backend_batch_size_rows_bucket{le="2",model="m",version="1"} 2',
      'edge_infer_backend_batch_size_rows_bucket{le="4",model="m",version="1"} 7',
      'edge_infer_backend_batch_size_rows_bucket{le="+Inf",model="m",version="1"} 7',
      'edge_infer_backend_execution_provider_info{model="m",version="1",provider="cuda"} 1',
      'edge_infer_backend_execution_provider_info{model="m",version="1",provider="cpu"} 0',
      'other_metric{model="m",version="1"} 9',
    ].join('\n')
    const stats = backendStatsOf(parsePrometheusText(text), new Date(0))
    expect(stats.rejections).toEqual([
      { model: 'm', reason: 'queue_full', status: 429, count: 4 },
      { model: 'm', reason: 'expired', status: 504, count: 2 },
      { model: 'm', reason: 'something_new', status: null, count: 1 },
    ])
    expect(stats.versions).toHaveLength(1)
    expect(stats.versions[0].execution_provider).toBe('cuda')
    expect(stats.versions[0].batch_size.buckets).toEqual([{ le: 1, count: 2 }, { le: 2, count: 0 }, { le: 4, count: 5 }, { le: '+Inf', count: 0 }])
  })

  it('sums replicas: refusals per model and reason, buckets per bound, a provider only when the replicas agree, ready when any is', () => {
    const replica = (provider: string, ready: number, lines: string[]) =>
      backendStatsOf(parsePrometheusText([
        `edge_infer_backend_ready ${ready}`,
        `edge_infer_backend_execution_provider_info{model="m",version="1",provider="${provider}"} 1`,
        'edge_infer_backend_rejected_requests_total{model="m",reason="queue_full"} 2',
        ...lines,
      ].join('\n')), new Date(0))
    const a = replica('cpu', 1, ['edge_infer_backend_batch_size_rows_bucket{le="1",model="m",version="1"} 1', 'edge_infer_backend_batch_size_rows_bucket{le="+Inf",model="m",version="1"} 3'])
    const b = replica('cuda', 0, ['edge_infer_backend_batch_size_rows_bucket{le="+Inf",model="m",version="1"} 4', 'edge_infer_backend_rejected_requests_total{model="m",reason="expired"} 1'])
    const sum = sumBackendStats([a, b], new Date(0))
    expect(sum.ready).toBe(true)
    expect(sum.versions).toHaveLength(1)
    expect(sum.versions[0].execution_provider).toBeNull()
    expect(sum.versions[0].batch_size.buckets).toEqual([{ le: 1, count: 1 }, { le: '+Inf', count: 6 }])
    expect(sum.rejections).toEqual([
      { model: 'm', reason: 'queue_full', status: 429, count: 4 },
      { model: 'm', reason: 'expired', status: 504, count: 1 },
    ])
    expect(sumBackendStats([a, a], new Date(0)).versions[0].execution_provider).toBe('cpu')
  })
})
