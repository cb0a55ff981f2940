import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import type { AppEnv, AppVariables } from '../../../../edge/app.ts'
import { isolateCache } from '../../../../edge/isolate.ts'
import { isolate } from '../../../../edge/pipeline/isolate/index.ts'
import { traceContext } from '../../../../edge/pipeline/trace/index.ts'
import { traced } from '../../../../edge/pipeline/trace/spans.ts'

// No OTLP endpoint is bound (the other OTEL_* bindings are): the edge records no spans but still propagates.
const app = new Hono<AppEnv>()
app.use('*', isolate({ isolateFor: isolateCache() }))
app.use('*', traceContext())
app.get('/', traced<AppVariables>('answer', async (c) => c.json({ traceparent: c.get('traceparent'), traced: c.get('tracing') !== undefined })))
const env = { OTEL_SERVICE_NAME: 'edge-test', OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20x', OTEL_TRACES_SAMPLER: 'always_on' }

const get = async (traceparent?: string) => {
  const res = await app.request('/', traceparent ? { headers: { traceparent } } : {}, env)
  return { traceId: res.headers.get('x-trace-id'), ...((await res.json()) as { traceparent: string; traced: boolean }) }
}

describe('traceContext without an OTLP endpoint', () => {
  it('joins the caller\'s trace under a span id of its own, and starts no spans', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
    const seen = await get(`00-${traceId}-00f067aa0ba902b7-00`)
    expect(seen.traceId).toBe(traceId)
    expect(seen.traceparent).toMatch(new RegExp(`^00-${traceId}-(?!00f067aa0ba902b7)[0-9a-f]{16}-00$`))
    expect(seen.traced).toBe(false)
  })

  it('starts a sampled trace when the caller sends none or an invalid one', async () => {
    for (const sent of [undefined, '00-00000000000000000000000000000000-00f067aa0ba902b7-01']) {
      const seen = await get(sent)
      expect(seen.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
      expect(seen.traceparent.slice(3, 35)).toBe(seen.traceId)
      expect(seen.traceId).not.toMatch(/^0+$/)
    }
  })
})
