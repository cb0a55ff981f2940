import { describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'
import { openApiDocument, type OpenApiDocument } from '../../edge/openapi.ts'

const served = async (): Promise<OpenApiDocument> => (await createApp().request('/openapi.json')).json() as Promise<OpenApiDocument>
const operationsOf = (doc: OpenApiDocument) =>
  Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })))

describe('GET /openapi.json', () => {
  it('serves the document, built once', async () => {
    const res = await createApp().request('/openapi.json')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(openApiDocument())))
    expect(openApiDocument()).toBe(openApiDocument())
  })

  it('is OpenAPI 3.1 with servers, a license and both ways of sending a key', async () => {
    const doc = await served()
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.servers.map((s) => s.url)).toEqual(['https://edge-infer.example.workers.dev', 'http://127.0.0.1:8787'])
    expect(doc.info.license).toEqual({ name: expect.any(String), identifier: 'LicenseRef-Proprietary' })
    expect(doc.components.securitySchemes).toEqual({
      bearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      apiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Api-Key' }),
    })
  })

  it('documents exactly the routes the app serves, with their methods', async () => {
    const app = createApp()
    const routes = new Set(
      app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:([a-z]+)/g, '{$1}')}`),
    )
    const documented = operationsOf(await served()).map(({ path, method }) => `${method} ${path}`)
    expect(routes.size).toBeGreaterThan(15)
    expect(documented.sort()).toEqual([...routes].sort())
  })

  it('gives each operation a unique operationId, a 2xx with a schema and a problem schema for every error status', async () => {
    const doc = await served()
    const ops = operationsOf(doc)
    expect(new Set(ops.map(({ op }) => op.operationId)).size).toBe(ops.length)
    const responses = doc.components.responses as Record<string, { content: Record<string, { schema: unknown }> }>
    for (const { path, method, op } of ops) {
      const where = `${method} ${path}`
      const statuses = Object.keys(op.responses)
      expect(statuses.filter((s) => s.startsWith('2')), where).not.toEqual([])
      for (const status of statuses) {
        const response = op.responses[status] as { $ref?: string; content?: Record<string, { schema: unknown }> }
        const content = response.$ref ? responses[response.$ref.replace('#/components/responses/', '')].content : response.content
        expect(content, `${where} ${status}`).toBeDefined()
        for (const media of Object.values(content ?? {})) expect(media.schema, `${where} ${status}`).toBeDefined()
        if (status.startsWith('2')) continue
        // /v2 refusals carry the Open Inference Protocol `error` member too.
        const problem = path.startsWith('/v2/') ? 'OipProblem' : 'Problem'
        expect(content?.['application/problem+json']?.schema, `${where} ${status}`).toEqual({ $ref: `#/components/schemas/${problem}` })
      }
    }
  })

  it('has every keyed operation refuse a missing or weak key and a spent limit, and the probes need none', async () => {
    for (const { path, method, op } of operationsOf(await served())) {
      const keyed = op.security.length > 0
      if (keyed) expect(Object.keys(op.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403', '429']))
      expect(keyed, `${method} ${path}`).toBe(!['/healthz', '/openapi.json', '/v2/health/live', '/v2/health/ready', '/console', '/console/assets/{file}'].includes(path))
    }
  })

  it('describes the bodies from the schemas the routes use', async () => {
    const { components } = await served()
    const schemas = components.schemas as Record<string, { properties?: Record<string, unknown>; required?: string[]; additionalProperties?: unknown }>
    expect(schemas.PredictRequest.required).toEqual(['instances'])
    // The PUT's schema is the route's rolloutSchema: strict, defaults optional on the way in, present on the way out.
    expect(Object.keys(schemas.RolloutInput.properties ?? {})).toEqual(['salt', 'arms', 'layout', 'pinnable', 'shadow', 'canary'])
    expect(schemas.RolloutInput.required).toEqual(['salt', 'arms'])
    expect(schemas.RolloutInput.additionalProperties).toBe(false)
    expect(schemas.Rollout.required).toEqual(['salt', 'arms', 'pinnable'])
    expect(schemas.Problem.required).toEqual(['type', 'title', 'status', 'detail'])
    expect(schemas.OipProblem.required).toEqual(['type', 'title', 'status', 'detail', 'error'])
    // Built at module load: a default that is the time of the build would differ between deploys.
    expect(JSON.stringify(schemas.RolloutInput)).not.toMatch(/"default":1\d{12}/)
  })

  it('names the headers clients need: ETag and If-Match on the rollout, the assignment on predict, the limits', async () => {
    const doc = await served()
    const rollout = doc.paths['/v1/models/{model}/rollout']
    expect(Object.keys((rollout.get.responses['200'] as { headers: object }).headers)).toContain('ETag')
    expect(rollout.put.parameters).toContainEqual({ $ref: '#/components/parameters/IfMatch' })
    expect(Object.keys(doc.paths['/v1/models/{model}/rollout'].put.responses)).toEqual(expect.arrayContaining(['412', '428']))
    const predict = doc.paths['/v1/models/{model}/predict'].post
    expect(Object.keys((predict.responses['200'] as { headers: object }).headers)).toEqual(
      expect.arrayContaining(['X-Model-Version', 'X-Variant', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
    )
    expect(predict.parameters).toEqual(expect.arrayContaining([{ $ref: '#/components/parameters/ModelVersionPin' }, { $ref: '#/components/parameters/ExperimentKey' }]))
    const tooMany = (doc.components.responses as Record<string, { headers: object }>).Problem429
    expect(Object.keys(tooMany.headers)).toEqual(expect.arrayContaining(['Retry-After', 'RateLimit-Reset']))
  })
})
