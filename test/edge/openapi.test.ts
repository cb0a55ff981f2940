import { describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'

describe('GET /openapi.json', () => {
  it('describes the edge API from the zod schemas', async () => {
    const res = await createApp().request('/openapi.json')
    expect(res.status).toBe(200)
    const doc = (await res.json()) as {
      openapi: string
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>
      components: { schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }> }
    }
    expect(doc.openapi).toBe('3.1.0')
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/models/{model}/predict', '/v2/models/{model}/infer', '/v1/models/{model}/rollout']))
    expect(Object.keys(doc.paths['/v1/models/{model}/predict'].post.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '429', '503']))
    expect(doc.components.schemas.PredictRequest.required).toEqual(['instances'])
    expect(Object.keys(doc.components.schemas.Rollout.properties ?? {})).toEqual(expect.arrayContaining(['salt', 'arms', 'pinnable', 'shadow']))
    expect(doc.components.schemas.Problem.required).toEqual(expect.arrayContaining(['type', 'title', 'status', 'detail']))
  })

  it('documents every route the app answers, with its method', async () => {
    const app = createApp()
    const doc = (await (await app.request('/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> }
    const served = app.routes
      .filter((r) => r.method !== 'ALL' && !['/healthz', '/openapi.json'].includes(r.path))
      .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:([a-z]+)/g, '{$1}')}`)
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m} ${path}`))
    expect(new Set(served).size).toBeGreaterThan(8)
    expect(documented).toEqual(expect.arrayContaining([...new Set(served)]))
  })
})
