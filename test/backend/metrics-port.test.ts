import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSettings } from '../../backend/settings.ts'
import { BACKEND_METRICS } from '../../shared/backend-metrics.ts'
import { startBackend, type BackendProcess } from './support/backend-process.ts'
import { DEMO_REPOSITORY } from './support/fixture-repository.ts'

const INFER_TOKEN = 'metrics-port-infer-token-0123'

describe('METRICS_PORT', () => {
  let backend: BackendProcess
  let metricsUrl: string
  beforeAll(async () => {
    backend = await startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY, METRICS_PORT: '0', INFER_TOKEN })
    metricsUrl = String(backend.logs.find((l) => l.msg === 'listening')?.metrics_url)
  })
  afterAll(async () => {
    await backend?.stop()
  })

  it('serves /metrics open on its own port, and nothing else there; on PORT only with the edge\'s token', async () => {
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(metricsUrl).not.toBe(backend.url)
    const apart = await fetch(`${metricsUrl}/metrics`)
    expect(apart.status).toBe(200)
    expect(await apart.text()).toContain(`# TYPE ${BACKEND_METRICS.queueDepth} gauge`)
    // The main port, the one a tunnel maps, keeps it for the edge's backend stats only.
    expect((await fetch(`${backend.url}/metrics`)).status).toBe(401)
    const withToken = await fetch(`${backend.url}/metrics`, { headers: { authorization: `Bearer ${INFER_TOKEN}` } })
    expect(withToken.status).toBe(200)
    expect(await withToken.text()).toContain(`# TYPE ${BACKEND_METRICS.queueDepth} gauge`)
    expect((await fetch(`${metricsUrl}/v2/health/ready`)).status).toBe(404)
    expect((await fetch(`${backend.url}/v2/health/ready`)).status).toBe(200)
  })

  it('closes the metrics port at shutdown too', async () => {
    expect(await backend.stop()).toBe(0)
    await expect(fetch(`${metricsUrl}/metrics`)).rejects.toThrow()
  })
})

describe('METRICS_PORT setting', () => {
  it('is off by default: /metrics stays on PORT', () => {
    expect(readSettings({}).METRICS_PORT).toBeUndefined()
  })

  it('may not be PORT itself', () => {
    expect(() => readSettings({ PORT: '8000', METRICS_PORT: '8000' })).toThrow(/METRICS_PORT must differ from PORT/)
    expect(readSettings({ PORT: '8000', METRICS_PORT: '9090' }).METRICS_PORT).toBe(9090)
  })
})
