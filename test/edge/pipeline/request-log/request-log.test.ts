import { Hono } from 'hono'
import { describe, expect, it, vi } from 'vitest'
import type { AppEnv } from '../../../../edge/app.ts'
import { requestId } from '../../../../edge/pipeline/request-id/index.ts'
import { requestLog } from '../../../../edge/pipeline/request-log/index.ts'
import { requireJson } from '../../../../edge/pipeline/body/index.ts'
import { traceContext } from '../../../../edge/pipeline/trace/index.ts'
import { onError } from '../../../../edge/on-error.ts'
import { Problem } from '../../../../edge/problem.ts'
import { givenIsolate } from '../../support/isolate.ts'
import { halfABody } from '../body/half-a-body.ts'

const lines: Array<Record<string, unknown>> = []
const app = new Hono<AppEnv>()
app.use('*', givenIsolate(), requestId(), traceContext(), requestLog({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }))
app.post('/routed', (c) => {
  c.set('caller', { name: 'web', tenant: 'web', scopes: ['predict'], rateLimitPerMinute: 60 })
  c.set('model', { name: 'credit-risk' } as AppEnv['Variables']['model'])
  c.set('assignment', { variant: 'canary', version: 3, by: 'sticky' })
  c.set('normalizedFixes', 2)
  c.set('featuresDegraded', false)
  return c.json({ ok: true })
})
app.post('/refused', () => {
  throw new Problem(401, 'Unauthorized', 'no key')
})
app.post('/body', requireJson(), (c) => c.json({ length: c.get('bodyText')?.length }))
app.onError(onError)

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
const post = async (path: string) => {
  lines.length = 0
  const res = await app.request(path, { method: 'POST', headers: { 'x-request-id': 'req-00000001', traceparent: `00-${traceId}-00f067aa0ba902b7-01` } })
  expect(lines).toHaveLength(1)
  return { res, line: lines[0] }
}

describe('requestLog middleware', () => {
  it('writes one line per request: who, what was served, how long, what was fixed', async () => {
    const { line } = await post('/routed')
    expect(line).toEqual({
      level: 'info', msg: 'request', request_id: 'req-00000001', trace_id: traceId, method: 'POST', path: '/routed', status: 200,
      duration_ms: expect.any(Number), caller: 'web', model: 'credit-risk', version: 3, variant: 'canary', normalized_fixes: 2, features_degraded: false,
    })
  })

  it('logs refusals with their status, and no model for a request that was never routed', async () => {
    const { res, line } = await post('/refused')
    expect(res.status).toBe(401)
    expect(line).toEqual({ level: 'info', msg: 'request', request_id: 'req-00000001', trace_id: traceId, method: 'POST', path: '/refused', status: 401, duration_ms: expect.any(Number) })
  })
})

describe('a client that goes away mid-body', () => {
  for (const [framing, headers] of [['chunked', {}], ['with a Content-Length', { 'content-length': '100' }]] as const) {
    it(`is logged as client-closed (499, warn), not as a server error (${framing})`, async () => {
      lines.length = 0
      const serverErrors = vi.spyOn(console, 'error').mockImplementation(() => {})
      try {
        const res = await app.request('/body', {
          method: 'POST', body: halfABody('{"instances":[{"age":'), duplex: 'half', headers: { 'content-type': 'application/json', ...headers },
        } as RequestInit)
        expect(res.status).toBe(499)
        expect(lines).toEqual([expect.objectContaining({ level: 'warn', msg: 'request', path: '/body', status: 499 })])
        expect(serverErrors).not.toHaveBeenCalled()
      } finally {
        serverErrors.mockRestore()
      }
    })
  }
})

describe('sampling plain successes', () => {
  const appWith = (rate: string, draw: number) => {
    const written: Array<Record<string, unknown>> = []
    const sampled = new Hono<AppEnv>()
    sampled.use('*', givenIsolate({}, { REQUEST_LOG_SAMPLE_RATE: rate }), requestId(), traceContext(), requestLog({ write: (line) => written.push(JSON.parse(line) as Record<string, unknown>), random: () => draw }))
    sampled.post('/plain', (c) => c.json({ ok: true }))
    sampled.post('/fixed', (c) => {
      c.set('normalizedFixes', 1)
      return c.json({ ok: true })
    })
    sampled.post('/degraded', (c) => {
      c.set('featuresDegraded', true)
      return c.json({ ok: true })
    })
    sampled.post('/refused', () => {
      throw new Problem(429, 'Too Many Requests', 'slow down')
    })
    sampled.onError(onError)
    const paths = async (...list: string[]) => {
      for (const path of list) await sampled.request(path, { method: 'POST' })
      return written.map((l) => l.path)
    }
    return paths
  }

  it('logs a plain success only when its draw falls under the rate, and by default 1 in 100', async () => {
    expect(await appWith('0.25', 0.2)('/plain')).toEqual(['/plain'])
    expect(await appWith('0.25', 0.3)('/plain')).toEqual([])
    expect(await appWith('', 0.005)('/plain')).toEqual(['/plain'])
    expect(await appWith('', 0.02)('/plain')).toEqual([])
    expect(await appWith('1', 0.999)('/plain')).toEqual(['/plain'])
  })

  it('always logs refusals, fixed-up and degraded requests, even at rate 0', async () => {
    expect(await appWith('0', 0)('/plain', '/fixed', '/degraded', '/refused')).toEqual(['/fixed', '/degraded', '/refused'])
  })
})
