import { Hono } from 'hono'
import { describe, expect, it, vi } from 'vitest'
import type { AppEnv } from '../../edge/app.ts'
import type { Bindings } from '../../edge/bindings.ts'
import { createIsolate, isolateCache } from '../../edge/isolate.ts'
import { settingsFrom } from '../../edge/bindings.ts'
import { onError } from '../../edge/on-error.ts'
import { FallbackTransport } from '../../edge/backend-client/fallback.ts'
import { HttpTransport } from '../../edge/backend-client/http.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { auth } from '../../edge/pipeline/auth/index.ts'
import { isolate } from '../../edge/pipeline/isolate/index.ts'
import { SlidingWindowLimiter } from '../../edge/stores/limits/memory.ts'
import { UpstashRateLimiter } from '../../edge/stores/limits/upstash.ts'
import { MemoryRolloutStore } from '../../edge/stores/rollouts/memory.ts'

const upstash = { UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:1', UPSTASH_REDIS_REST_TOKEN: 't' }

describe('settingsFrom', () => {
  it('reads each setting as a positive number, else its default', () => {
    expect(settingsFrom({})).toEqual({ maxBodyBytes: 262_144, maxInstances: 64, allowedOrigins: [], featureTimeoutMs: 25, redisTimeoutMs: 200, metricsScrapeMs: 3_000, feedbackModels: new Set(), feedbackTtlSeconds: 2_592_000, predictionCache: { maxEntries: 10_000, maxEntryBytes: 4_096 }, requestLogSampleRate: 0.01 })
    expect(settingsFrom({ MAX_BODY_BYTES: '1024', MAX_INSTANCES: ' 8 ', FEATURE_TIMEOUT_MS: ' 7.5 ', REDIS_TIMEOUT_MS: '40', METRICS_SCRAPE_TIMEOUT_MS: '1500', ALLOWED_ORIGINS: ' https://a.example , ,https://b.example', FEEDBACK_MODELS: ' credit-risk, ,fraud', FEEDBACK_TTL_SECONDS: '3600', PREDICTION_CACHE_MAX_ENTRIES: '50', PREDICTION_CACHE_MAX_ENTRY_BYTES: '512', REQUEST_LOG_SAMPLE_RATE: '0' })).toEqual({
      maxBodyBytes: 1024, maxInstances: 8, allowedOrigins: ['https://a.example', 'https://b.example'], featureTimeoutMs: 7.5, redisTimeoutMs: 40, metricsScrapeMs: 1_500, feedbackModels: new Set(['credit-risk', 'fraud']), feedbackTtlSeconds: 3_600, predictionCache: { maxEntries: 50, maxEntryBytes: 512 }, requestLogSampleRate: 0,
    })
    expect(settingsFrom({ FEEDBACK_MODELS: ' * ' }).feedbackModels).toBe('all')
    for (const bad of ['', '0', '-5', 'abc', 'Infinity']) {
      expect(settingsFrom({ MAX_BODY_BYTES: bad, MAX_INSTANCES: bad, FEATURE_TIMEOUT_MS: bad, REDIS_TIMEOUT_MS: bad, METRICS_SCRAPE_TIMEOUT_MS: bad }), bad).toMatchObject({ maxBodyBytes: 262_144, maxInstances: 64, featureTimeoutMs: 25, redisTimeoutMs: 200, metricsScrapeMs: 3_000 })
    }
    // A sample rate is a share: 0 and 1 are kept, anything outside [0, 1] or not a number is the default.
    for (const [raw, rate] of [['1', 1], ['0.5', 0.5], ['1.5', 0.01], ['-0.1', 0.01], ['half', 0.01], ['', 0.01]] as const) expect(settingsFrom({ REQUEST_LOG_SAMPLE_RATE: raw }).requestLogSampleRate, raw).toBe(rate)
    // Counts are whole numbers.
    expect(settingsFrom({ MAX_BODY_BYTES: '10.5', MAX_INSTANCES: '2.5' })).toMatchObject({ maxBodyBytes: 262_144, maxInstances: 64 })
  })
})

describe('isolateCache', () => {
  it('builds one isolate per configuration: the same env object or equal bindings reuse it, any changed binding builds anew', () => {
    const built: Bindings[] = []
    const isolateFor = isolateCache((env) => (built.push(env), createIsolate(env)))
    const env: Bindings = { BACKEND_URL: 'http://127.0.0.1:9', MAX_INSTANCES: '8' }
    const first = isolateFor(env)
    expect(isolateFor(env)).toBe(first)
    expect(isolateFor({ MAX_INSTANCES: '8', BACKEND_URL: 'http://127.0.0.1:9' })).toBe(first)
    const changed = isolateFor({ ...env, MAX_INSTANCES: '9' })
    expect(changed).not.toBe(first)
    expect(changed.settings.maxInstances).toBe(9)
    expect(isolateFor({ ...env, API_KEYS: '[]' })).not.toBe(changed)
    expect(built).toHaveLength(3)
  })
})

describe('createIsolate', () => {
  it('without Redis: isolate-local limiter, rollouts and embedded demo features; with Upstash: shared ones', async () => {
    const local = createIsolate({ BACKEND_URL: 'http://127.0.0.1:9' })
    expect(local.limiter).toBeInstanceOf(SlidingWindowLimiter)
    expect(local.rollouts).toBeInstanceOf(MemoryRolloutStore)
    expect(await local.features.read('user', 'u-1')).toMatchObject({ source: 'store', found: true, values: { account_age_months: '48' } })
    const shared = createIsolate({ BACKEND_URL: 'http://127.0.0.1:9', ...upstash })
    expect(shared.limiter).toBeInstanceOf(UpstashRateLimiter)
    expect(shared.rollouts).not.toBeInstanceOf(MemoryRolloutStore)
    // A URL alone is not enough.
    expect(createIsolate({ BACKEND_URL: '', UPSTASH_REDIS_REST_URL: upstash.UPSTASH_REDIS_REST_URL }).limiter).toBeInstanceOf(SlidingWindowLimiter)
  })

  it('uses a given feature seed', async () => {
    const features = createIsolate({ BACKEND_URL: '' }, { featureSeed: { user: { 'x-1': { num_products: 7 } } } }).features
    expect(await features.read('user', 'x-1')).toMatchObject({ values: { num_products: '7' } })
    expect(await features.read('user', 'u-1')).toMatchObject({ found: false, degraded: false })
  })

  it('the HTTP backend, behind the Lambda fallback when one is configured; OIP reads always go to the HTTP backend', () => {
    const http = createIsolate({ BACKEND_URL: 'http://127.0.0.1:9' })
    expect(http.transport).toBeInstanceOf(HttpTransport)
    const both = createIsolate({ BACKEND_URL: 'http://127.0.0.1:9', LAMBDA_FUNCTION: 'f', LAMBDA_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 's' })
    expect(both.transport).toBeInstanceOf(FallbackTransport)
    expect(both.reader).toBeInstanceOf(HttpTransport)
    expect(() => createIsolate({ BACKEND_URL: 'http://127.0.0.1:9', LAMBDA_FUNCTION: 'f' })).toThrow(/LAMBDA_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY are not configured/)
  })

  it('without BACKEND_URL every inference and read is a 503 saying so', async () => {
    const none = createIsolate({ BACKEND_URL: '' })
    await expect(none.transport.models('r')).rejects.toMatchObject({ status: 503, extra: { slug: 'backend-unconfigured' } })
    await expect(none.reader.read('/v2/health/ready', 'r')).rejects.toMatchObject({ status: 503 })
    expect(none.monitor).toBeUndefined()
  })

  it('an unusable API_KEYS is logged once, without its content, and each authenticated request gets 503', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      const app = new Hono<AppEnv>()
      app.use('*', isolate({ isolateFor: isolateCache() }), auth())
      app.get('/', (c) => c.text('ok'))
      app.onError(onError)
      const key = generateApiKey()
      const secret = `[{"name": "web", "hash": "${await hashApiKey(key)}", "scopes": ["predict"], "rate_limit_per_minute": "lots"}]`
      for (let i = 0; i < 3; i++) {
        const res = await app.request('/', { headers: { 'x-api-key': key } }, { BACKEND_URL: '', API_KEYS: secret })
        expect(res.status).toBe(503)
        expect(await res.json()).toMatchObject({ detail: expect.stringMatching(/authentication is not configured correctly/) })
      }
      const logged = errors.mock.calls.map((call) => String(call[0])).filter((line) => line.includes('API key configuration is invalid'))
      expect(logged).toHaveLength(1)
      expect(logged[0]).not.toContain(await hashApiKey(key))
    } finally {
      errors.mockRestore()
    }
  })
})
