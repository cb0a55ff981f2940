import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../../edge/stores/keys/memory.ts'
import { normalizationExposition } from '../../../../edge/exposition/normalization.ts'
import { NORMALIZED, REQUEST_METRICS_HASH, type Tally, field } from '../../../../edge/stores/tallies/tally.ts'
import { applicant } from '../../../backend/support/applicants.ts'
import type { BackendProcess } from '../../../backend/support/backend-process.ts'
import type { UpstashRedis } from '../../../dev/support/upstash-redis.ts'
import { edgeClient } from '../../../support/client.ts'
import { startStack, type Stack } from '../../../support/stack.ts'

const TOKEN = 'normalization-metrics-test-token-01'

let stack: Stack
let backend: BackendProcess
let upstash: UpstashRedis
const keys = { web: generateApiKey('test'), ios: generateApiKey('test'), ops: generateApiKey('test') }
/** Key names that are also properties of every plain object. */
const BUILT_IN_NAMES = ['constructor', 'toString', 'valueOf', 'hasOwnProperty'] as const
const builtIns = Object.fromEntries(BUILT_IN_NAMES.map((name) => [name, generateApiKey('test')]))
let store: MemoryKeyStore

const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}

/** The same applicant as a buggy client sends it: a numeric string, a BOM and padding: 3 fixes. */
const sloppy = (i: number) => ({ ...instance(i), age: String(instance(i).age), region: `\uFEFF ${instance(i).region} ` })

const appWith = (env: Record<string, string>) => {
  const app = createApp({ parts: { keys: store }, log: () => {} })
  const edge = edgeClient((request) => app.request(request, undefined, env))
  const metrics = (key = keys.ops) => app.request('/metrics', { headers: { 'x-api-key': key } }, env)
  return { edge, metrics }
}

beforeAll(async () => {
  // The app runs in process: the stack brings up the backend and Redis, no worker; only the app is given Redis.
  const started = await startStack({ redis: { token: TOKEN, commandTimeoutMs: 2_000, backend: false }, worker: false, keys: [] })
  stack = started
  ;({ backend, upstash } = started)
  store = new MemoryKeyStore([
    { name: 'web', hash: await hashApiKey(keys.web), scopes: ['predict'], rate_limit_per_minute: 1000 },
    { name: 'ios', hash: await hashApiKey(keys.ios), scopes: ['predict'], rate_limit_per_minute: 1000 },
    { name: 'ops', hash: await hashApiKey(keys.ops), scopes: ['admin'], rate_limit_per_minute: 1000 },
    ...(await Promise.all(BUILT_IN_NAMES.map(async (name) => ({ name, hash: await hashApiKey(builtIns[name]), scopes: ['predict' as const], rate_limit_per_minute: 1000 })))),
  ])
})

afterAll(async () => {
  await stack?.stop()
})

describe('input fixes counted per API key', () => {
  it('counts only the keys whose requests needed fixing, and serves the counters to admins', async () => {
    const { edge, metrics } = appWith({ BACKEND_URL: backend.url, MAX_INSTANCES: '64' })
    const fixed = await edge.predict({ instances: [sloppy(1), sloppy(2)], entity: { user_id: 'u-1' } }, { key: keys.ios })
    expect(fixed.status).toBe(200)
    expect(fixed.headers.get('x-input-normalized')).toBe('6')
    expect((await edge.predict({ instances: [sloppy(3)], entity: { user_id: 'u-1' } }, { key: keys.ios })).status).toBe(200)
    expect((await edge.predict({ instances: [instance(1)], entity: { user_id: 'u-1' } }, { key: keys.web })).status).toBe(200)

    const res = await metrics()
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    const text = await res.text()
    expect(text).toContain('edge_input_normalized_requests_total{key="ios"} 2')
    expect(text).toContain('edge_input_normalization_fixes_total{key="ios"} 9')
    expect(text).not.toContain('key="web"')
    expect((await metrics(keys.web)).status).toBe(403)
    expect((await metrics('')).status).toBe(401)
  })

  it('counts keys named like built-in object properties as any other key, and touches no built-in object', async () => {
    const { edge, metrics } = appWith({ BACKEND_URL: backend.url, MAX_INSTANCES: '64' })
    for (const name of BUILT_IN_NAMES) expect((await edge.predict({ instances: [sloppy(1)], entity: { user_id: 'u-1' } }, { key: builtIns[name] })).status).toBe(200)
    const text = await (await metrics()).text()
    for (const name of BUILT_IN_NAMES) {
      expect(text).toContain(`edge_input_normalized_requests_total{key="${name}"} 1\n`)
      expect(text).toContain(`edge_input_normalization_fixes_total{key="${name}"} 3\n`)
    }
    expect(Object.prototype).not.toHaveProperty('requests')
    expect(Object).not.toHaveProperty('requests')
    expect(String(Object.prototype.toString)).toContain('[native code]')
  })

  it('adds every isolate\'s counts up in Redis when Upstash is configured', async () => {
    const env = { BACKEND_URL: backend.url, MAX_INSTANCES: '64', UPSTASH_REDIS_REST_URL: upstash.adapter.url, UPSTASH_REDIS_REST_TOKEN: TOKEN }
    // Two apps with their own services stand for two isolates.
    const first = appWith(env)
    const second = appWith(env)
    expect((await first.edge.predict({ instances: [sloppy(4)], entity: { user_id: 'u-1' } }, { key: keys.web })).status).toBe(200)
    expect((await second.edge.predict({ instances: [sloppy(5)], entity: { user_id: 'u-1' } }, { key: keys.web })).status).toBe(200)
    // The counts go out with the request counts, within the flush interval; wait for them rather than for time.
    const counted = async () => Number(await upstash.client.hget(REQUEST_METRICS_HASH, field(NORMALIZED, 'web')))
    for (let i = 0; i < 250 && (await counted()) !== 2; i++) await new Promise((r) => setTimeout(r, 20))
    expect(await counted()).toBe(2)
    const both: Tally = new Map([[field(NORMALIZED, 'web'), 2], ['normalization_fixes web', 6]])
    expect(await (await second.metrics()).text()).toContain(normalizationExposition(both))
  })
})
