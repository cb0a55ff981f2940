import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'
import { settingsFrom } from '../../edge/bindings.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../edge/stores/keys/memory.ts'
import { startStubBackend, type StubBackend } from './support/stub-backend.ts'

/** One backend call's own timeout at the edge: the scrape must not wait out even one. */
const BACKEND_TIMEOUT_MS = 5_000
const SCRAPE_MS = 400

let stalled: StubBackend
const admin = generateApiKey('test')

beforeAll(async () => {
  stalled = await startStubBackend(() => 'stall')
})
afterAll(async () => {
  await stalled?.close()
})

describe('GET /metrics while the backend accepts and never answers', () => {
  it('answers within its scrape budget with the edge\'s own counts, leaving out what only the backend could say', async () => {
    const app = createApp({ parts: { keys: new MemoryKeyStore([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 1_000 }]) }, log: () => {} })
    const env = { BACKEND_URL: stalled.url, METRICS_SCRAPE_TIMEOUT_MS: String(SCRAPE_MS), FEEDBACK_MODELS: '*' }
    // Answered by the edge itself: a request without a key.
    expect((await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }, env)).status).toBe(401)
    const started = Date.now()
    const res = await app.request('/metrics', { headers: { 'x-api-key': admin } }, env)
    const elapsed = Date.now() - started
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text).toMatch(/^edge_infer_edge_requests_total\{model="other",version="none",variant="none",status_class="4xx",code="401",served_by="edge"\} 1$/m)
    expect(text).toContain('# TYPE edge_input_normalized_requests_total counter')
    // Far below one backend timeout, whatever the machine's load: the budget is what bounds it.
    expect(elapsed).toBeLessThan(BACKEND_TIMEOUT_MS - 1_000)
    expect(stalled.seen.length).toBeGreaterThan(0)
  })

  it('has a budget of 3 s unless METRICS_SCRAPE_TIMEOUT_MS sets one: under Prometheus\'s default 10 s scrape timeout', () => {
    expect(settingsFrom({}).metricsScrapeMs).toBe(3_000)
    expect(settingsFrom({ METRICS_SCRAPE_TIMEOUT_MS: '1500' }).metricsScrapeMs).toBe(1_500)
  })
})
