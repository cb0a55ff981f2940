import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIsolate } from '../../../edge/isolate.ts'
import { exportConfigFrom, headersFrom, tracesUrlFrom } from '../../../edge/telemetry/config.ts'
import { telemetryFrom } from '../../../edge/telemetry/index.ts'
import { samplerFrom } from '../../../edge/telemetry/sampler.ts'
import { startOtlpReceiver, type OtlpReceiver } from '../../support/otlp-receiver.ts'
import { freePort } from '../../support/ports.ts'

let receiver: OtlpReceiver
/** Answers every export with a 503. */
let refusing: Server
let refusingUrl: string

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  refusing = createServer((req, res) => req.resume().on('end', () => res.writeHead(503).end()))
  await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve))
  refusingUrl = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}`
})

afterAll(async () => {
  await receiver?.close()
  await new Promise((resolve) => refusing?.close(resolve))
})

describe('the OTEL_* bindings', () => {
  it('appends /v1/traces to the base endpoint and takes the traces endpoint as it is', () => {
    expect(tracesUrlFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.test/otlp/' })).toBe('https://otlp.example.test/otlp/v1/traces')
    expect(tracesUrlFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://a.test', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b.test/traces' })).toBe('https://b.test/traces')
    expect(tracesUrlFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeUndefined()
  })

  it('decodes the headers as the spec writes them, skipping pairs it cannot read', () => {
    expect(headersFrom('Authorization=Basic%20dXNlcjpwYXNz, x-honeycomb-team = key=with=equals ,broken,=nokey,bad=%E0%A4%A')).toEqual({
      authorization: 'Basic dXNlcjpwYXNz',
      'x-honeycomb-team': 'key=with=equals',
    })
  })

  it('is off when no endpoint is bound, whatever else is', () => {
    const env = { BACKEND_URL: 'http://127.0.0.1:1', OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_HEADERS: 'a=b', OTEL_TRACES_SAMPLER: 'always_on' }
    expect(exportConfigFrom(env)).toBeUndefined()
    expect(createIsolate(env).telemetry).toBeUndefined()
    expect(createIsolate({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' }).telemetry).toBeDefined()
  })

  it('defaults the service name and the timeout, and ignores a timeout that is not a positive number', () => {
    expect(exportConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c.test', OTEL_EXPORTER_OTLP_TIMEOUT: '-5' })).toEqual({ url: 'http://c.test/v1/traces', headers: {}, serviceName: 'edge-infer-edge', timeoutMs: 10_000 })
  })
})

describe('samplerFrom', () => {
  const decide = (name: string | undefined, arg: string | undefined, parentFlags?: TraceFlags) => {
    const parent = parentFlags === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, { traceId: 'ffffffffffffffffffffffffffffffff', spanId: '00f067aa0ba902b7', traceFlags: parentFlags, isRemote: true })
    // A trace id that a ratio of 0.5 keeps and one it drops (the SDK XORs the id's four 32-bit words).
    return ['00000000000000000000000000000001', 'ffffffff000000000000000000000000'].map((traceId) => samplerFrom(name, arg).sampler.shouldSample(parent, traceId, 'edge.request', 0, {}, []).decision)
  }

  it('follows the caller by default, and samples what the edge starts', () => {
    expect(decide(undefined, undefined, TraceFlags.NONE)).toEqual([0, 0])
    expect(decide(undefined, undefined)).toEqual([2, 2])
  })

  it('applies traceidratio alone or under the parent\'s decision', () => {
    expect(decide('traceidratio', '0.5')).toEqual([2, 0])
    expect(decide('parentbased_traceidratio', '0.5', TraceFlags.SAMPLED)).toEqual([2, 2])
    expect(decide('parentbased_traceidratio', '0.5')).toEqual([2, 0])
    expect(decide('always_off', undefined, TraceFlags.SAMPLED)).toEqual([0, 0])
  })

  it('names a sampler it does not have, and uses the default', () => {
    const { unknown } = samplerFrom('jaeger_remote', undefined)
    expect(unknown).toBe('jaeger_remote')
    expect(decide('jaeger_remote', undefined, TraceFlags.NONE)).toEqual([0, 0])
  })
})

describe('telemetryFrom', () => {
  it('is off without an endpoint, and with one builds the SDK once, at the first call of its loader', async () => {
    expect(telemetryFrom({})).toBeUndefined()
    const load = telemetryFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })!
    const [first, second] = await Promise.all([load(), load()])
    expect(second).toBe(first)
    expect(await load()).toBe(first)
    expect(first.tracer.startSpan('probe').spanContext().traceId).toMatch(/^[0-9a-f]{32}$/)
  })

  it('exports a request\'s spans once the last of them has ended, in one export', async () => {
    const telemetry = await telemetryFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'unit' })!()
    const root = telemetry.tracer.startSpan('edge.request')
    const traceId = root.spanContext().traceId
    const child = telemetry.tracer.startSpan('edge.shadow', {}, trace.setSpan(ROOT_CONTEXT, root))
    root.end()
    // The request span has ended but its child has not: the export waits for it.
    const exported = telemetry.exportRequest(root)
    child.end()
    await exported
    expect(receiver.spans.filter((s) => s.traceId === traceId).map((s) => [s.service, s.name]).sort()).toEqual([['unit', 'edge.request'], ['unit', 'edge.shadow']])
    expect(telemetry.counts()).toEqual({ exportedSpans: 2, failedExports: 0, lateSpans: 0 })
  })

  it('gives up waiting on a span that does not end, and counts it late when it does', async () => {
    const telemetry = await telemetryFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, { maxWaitMs: 20 })!()
    const root = telemetry.tracer.startSpan('edge.request')
    const child = telemetry.tracer.startSpan('edge.shadow', {}, trace.setSpan(ROOT_CONTEXT, root))
    root.end()
    await telemetry.exportRequest(root)
    child.end()
    expect(receiver.spans.filter((s) => s.traceId === root.spanContext().traceId).map((s) => s.name)).toEqual(['edge.request'])
    expect(telemetry.counts()).toMatchObject({ exportedSpans: 1, lateSpans: 1 })
  })

  it('keeps two requests of one trace apart', async () => {
    const telemetry = await telemetryFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })!()
    const caller = trace.setSpanContext(ROOT_CONTEXT, { traceId: '2af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true })
    const [first, second] = [telemetry.tracer.startSpan('edge.request', {}, caller), telemetry.tracer.startSpan('edge.request', {}, caller)]
    const slowChild = telemetry.tracer.startSpan('edge.shadow', {}, trace.setSpan(caller, second))
    first.end()
    second.end()
    // The first request's export does not wait on the second one's open span.
    await telemetry.exportRequest(first)
    expect(telemetry.counts().exportedSpans).toBe(1)
    slowChild.end()
    await telemetry.exportRequest(second)
    expect(telemetry.counts().exportedSpans).toBe(3)
  })

  it('never rejects: a refused or unreachable export is counted, and only the first is logged', async () => {
    for (const endpoint of [refusingUrl, `http://127.0.0.1:${await freePort()}`]) {
      const lines: string[] = []
      const telemetry = await telemetryFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20hush' }, { log: (l) => lines.push(l) })!()
      for (let i = 0; i < 3; i++) {
        const span = telemetry.tracer.startSpan('edge.request')
        span.end()
        await telemetry.exportRequest(span)
      }
      expect(telemetry.counts()).toEqual({ exportedSpans: 0, failedExports: 3, lateSpans: 0 })
      expect(lines).toHaveLength(1)
      expect(JSON.parse(lines[0])).toMatchObject({ level: 'error', collector: new URL(endpoint).origin })
      expect(lines[0]).not.toContain('hush')
    }
  })

  it('abandons an export at OTEL_EXPORTER_OTLP_TIMEOUT', async () => {
    const stalled = createServer(() => {})
    await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve))
    try {
      const lines: string[] = []
      const telemetry = await telemetryFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(stalled.address() as AddressInfo).port}`, OTEL_EXPORTER_OTLP_TIMEOUT: '100' }, { log: (l) => lines.push(l) })!()
      const span = telemetry.tracer.startSpan('edge.request')
      span.end()
      await telemetry.exportRequest(span)
      expect(telemetry.counts().failedExports).toBe(1)
      expect(lines[0]).toMatch(/TimeoutError/)
    } finally {
      stalled.closeAllConnections()
      await new Promise((resolve) => stalled.close(resolve))
    }
  })

  it('records nothing for a request its sampler drops', async () => {
    const telemetry = await telemetryFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: refusingUrl, OTEL_TRACES_SAMPLER: 'always_off' })!()
    const span = telemetry.tracer.startSpan('edge.request')
    expect(span.isRecording()).toBe(false)
    span.end()
    await telemetry.exportRequest(span)
    expect(telemetry.counts()).toEqual({ exportedSpans: 0, failedExports: 0, lateSpans: 0 })
  })
})
