import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { handler, shutdownLambda } from '../../backend/lambda.ts'
import { BACKEND_METRICS } from '../../shared/backend-metrics.ts'
import { setProcessEnv } from '../support/process-env.ts'
import { DEMO_REPOSITORY } from './support/fixture-repository.ts'
import { CREDIT_WIDTH, creditRequest } from './support/applicants.ts'

/**
 * The Lambda tier's Prometheus series: the handler pushes them over OTLP/HTTP (JSON here) at the
 * end of each invoke, under the names of shared/backend-metrics.ts. A local receiver records
 * every metrics export; no wait is needed, since each invoke answers only after its push.
 */

interface OtlpValue { stringValue?: string; intValue?: string | number }
interface DataPoint { attributes?: Array<{ key: string; value: OtlpValue }>; asInt?: string | number; asDouble?: number; count?: string | number; sum?: number; bucketCounts?: Array<string | number>; explicitBounds?: number[] }
interface OtlpMetric { name: string; sum?: { dataPoints: DataPoint[]; isMonotonic?: boolean; aggregationTemporality?: number }; histogram?: { dataPoints: DataPoint[] } }
interface MetricsExport { resourceMetrics: Array<{ resource?: { attributes?: Array<{ key: string; value: OtlpValue }> }; scopeMetrics: Array<{ metrics: OtlpMetric[] }> }> }

let server: Server
const exports: MetricsExport[] = []
let restoreEnv: (() => void) | undefined

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/metrics') exports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as MetricsExport)
      // Spans go to /v1/traces and are accepted unread.
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  restoreEnv = setProcessEnv({
    MODEL_REPOSITORY: DEMO_REPOSITORY,
    LOG_LEVEL: 'silent',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'edge-infer-lambda',
  })
})

afterAll(async () => {
  await shutdownLambda()
  restoreEnv?.()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

const attributes = (p: DataPoint): Record<string, string> => Object.fromEntries((p.attributes ?? []).map((a) => [a.key, String(a.value.stringValue ?? a.value.intValue)]))

/** The data points of one metric in the newest export (cumulative: it holds everything counted so far). */
const points = (name: string): Array<DataPoint & { labels: Record<string, string> }> => {
  const last = exports.at(-1)
  const metric = last?.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)).find((m) => m.name === name)
  return (metric?.sum?.dataPoints ?? metric?.histogram?.dataPoints ?? []).map((p) => ({ ...p, labels: attributes(p) }))
}

describe('the Lambda tier pushes the HTTP tier\'s request and batch series over OTLP', () => {
  it('counts answers, refusals and batches under the shared names, with served_by=lambda, pushed before each invoke answers', async () => {
    await handler({ model_name: 'credit-risk', model_version: '2', ...creditRequest(3) })
    const afterFirst = exports.length
    expect(afterFirst).toBeGreaterThan(0)
    await handler({ model_name: 'credit-risk', model_version: '2', inputs: [{ name: 'features', shape: [1, CREDIT_WIDTH + 1], datatype: 'FP32', data: [] }] })
    // Unknown models reach no version's series, as on the HTTP tier.
    expect(await handler({ model_name: 'nope', ...creditRequest(1) })).toMatchObject({ status: 404 })
    expect(exports.length).toBeGreaterThan(afterFirst)

    const labels = { model: 'credit-risk', version: '2', served_by: 'lambda' }
    expect(points(BACKEND_METRICS.requests).map((p) => ({ labels: p.labels, value: Number(p.asInt ?? p.asDouble) })).sort((a, b) => a.labels.status!.localeCompare(b.labels.status!)))
      .toEqual([{ labels: { ...labels, status: '200' }, value: 1 }, { labels: { ...labels, status: '400' }, value: 1 }])
    expect(points(BACKEND_METRICS.rejected).map((p) => [p.labels, Number(p.asInt ?? p.asDouble)]))
      .toEqual([[{ model: 'credit-risk', reason: 'invalid_request', served_by: 'lambda' }, 1]])
    expect(points(BACKEND_METRICS.batches).map((p) => [p.labels, Number(p.asInt ?? p.asDouble)])).toEqual([[{ ...labels, reason: 'single' }, 1]])
    const [batch] = points(BACKEND_METRICS.batchSize)
    expect({ labels: batch?.labels, count: Number(batch?.count), sum: batch?.sum, bounds: batch?.explicitBounds?.[0] }).toEqual({ labels, count: 1, sum: 3, bounds: 1 })
    for (const name of [BACKEND_METRICS.requestDuration, BACKEND_METRICS.queueDuration, BACKEND_METRICS.computeDuration]) {
      const [duration] = points(name)
      expect({ name, labels: duration?.labels, count: Number(duration?.count), bounds: duration?.explicitBounds?.slice(0, 2) }).toEqual({ name, labels, count: 1, bounds: [0.0001, 0.00025] })
    }
  })
})
