import { writeFileSync } from 'node:fs'
import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey, type KeyEntry } from '../../edge/stores/keys/api-key.ts'
import { API_KEYS_HASH } from '../../edge/stores/keys/upstash.ts'
import { DEFAULT_DRIFT_REDIS_TIMEOUT_MS } from '../../backend/monitor/drift/count-store.ts'
import { startUpstashAdapter, type UpstashAdapter } from '../../dev/upstash-adapter/server.ts'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS } from '../../shared/upstash-client.ts'
import { applicant } from '../backend/support/applicants.ts'
import { startBackend, until, type BackendProcess } from '../backend/support/backend-process.ts'
import { startWorker, type RunningWorker } from '../edge/support/workerd.ts'
import { startRedisServer, type RedisServer } from '../dev/support/redis-server.ts'
import { edgeClient } from '../support/client.ts'

/**
 * Redis faults end to end: one real redis-server behind the local Upstash adapter, shared by the
 * bundled worker in real workerd and the real backend (drift counts). For each fault (a STALL:
 * redis-server SIGSTOPped; an OUTAGE: killed, then restarted on its port) every Redis use on the
 * request path is tried once the fault is on: each answer must come long before the fault ends
 * (its budget plus a margin), degraded or 503 as the design says, and full service must return
 * once the fault is over. The adapter's own command timeout is set past the fault, as real
 * Upstash has none to rescue a caller. Measured latencies go to /tmp/readme-faults-redis.md.
 */

const TOKEN = 'faults-redis-test-token-0123456789'
const MODEL = 'credit-risk'
/** How long each fault lasts at least; it stays on until every use has been tried, however slow the machine. */
const FAULT_MS = 10_000
/**
 * Slack over a budget for scheduling, bundling and the backend on two loaded shared cores. The
 * fault outlasts every answer by construction, so a wait that is not bounded by its budget waits
 * for the adapter's command timeout (3 × FAULT_MS) and fails this whatever the machine's speed.
 */
const MARGIN_MS = 5_000
/** The rollout cache's TTL: after it, a read asks Redis again. */
const ROLLOUT_TTL_MS = 2_000
/** Concurrent clients, and for how long they send, while the fault is on. */
const CLIENTS = 4
const LOAD_MS = 1_500
const LIMITER_MS = 50
const FEATURES_MS = 200
const REDIS_MS = DEFAULT_EDGE_REDIS_TIMEOUT_MS
/** The backend's drift-count budget, set below its default so that the setting is seen to reach the store. */
const DRIFT_REDIS_MS = DEFAULT_DRIFT_REDIS_TIMEOUT_MS - 300
/** A backend read may wait behind one flush in flight, then make its own call. */
const DRIFT_MS = 2 * DRIFT_REDIS_MS

let redis: RedisServer
let adapter: UpstashAdapter
let backend: BackendProcess
let worker: RunningWorker
let client: Redis

type Fault = 'stall' | 'outage'
const secret = { web: generateApiKey('test'), admin: generateApiKey('test'), tight: { stall: generateApiKey('test'), outage: generateApiKey('test') } }
/** Keys issued into Redis: one used before each fault (cached), one never used before it. */
const issued = { known: generateApiKey('test'), fresh: { stall: generateApiKey('test'), outage: generateApiKey('test') } }
const rollout = { salt: MODEL, arms: [{ variant: 'stable', version: 2, weight: 0 }, { variant: 'blue', version: 1, weight: 100 }], pinnable: [1, 2] }

interface Measured {
  fault: Fault
  dependency: string
  outcome: string
  latencyMs: number
  budgetMs: number
  recoveredMs?: number
}
const table: Measured[] = []

const entryOf = async (name: string, key: string, scopes: KeyEntry['scopes'], perMinute: number): Promise<KeyEntry> =>
  ({ name, hash: await hashApiKey(key), scopes, rate_limit_per_minute: perMinute })

/** What a persistent Redis would still hold after a restart; this one starts empty, so it is written again. */
const seed = async () => {
  const entries = [await entryOf('known', issued.known, ['predict'], 6_000), await entryOf('fresh-stall', issued.fresh.stall, ['predict'], 6_000), await entryOf('fresh-outage', issued.fresh.outage, ['predict'], 6_000)]
  await client.hset(API_KEYS_HASH, Object.fromEntries(entries.map((e) => [e.hash, JSON.stringify(e)])))
  // As an admin's PUT stores it (revision 1): all traffic on version 1, unlike the default (newest).
  await client.hset(`rollout:${MODEL}`, { revision: '1', rollout: JSON.stringify(rollout) })
  for (const user of ['u-before', 'u-stall', 'u-outage', 'u-after-stall', 'u-after-outage']) {
    await client.hset(`features:user:${user}`, { account_age_months: '240', num_products: '9' })
  }
}

const instance = () => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(4)
  return request
}

/** A request and how long its answer took, body included (the typed client's answers come read). */
const timed = async (request: () => Promise<Response | { response: Response }>): Promise<{ res: Response; ms: number }> => {
  const started = performance.now()
  const answer = await request()
  const res = answer instanceof Response ? answer : answer.response
  if (!res.bodyUsed) await res.arrayBuffer().catch(() => undefined)
  return { res, ms: Math.round(performance.now() - started) }
}

const predict = (key: string, user = 'u-before') => edgeClient(worker.url, { key }).predict([instance()], { model: MODEL, entity: { user_id: user } })
const admin = (path: string) => fetch(`${worker.url}${path}`, { headers: { 'x-api-key': secret.admin } })
const driftReport = () => fetch(`${backend.url}/v2/models/${MODEL}/versions/2/drift`)
const backendMetrics = () => fetch(`${backend.url}/metrics`)

const loggedSince = (from: number, text: string) => worker.logs.slice(from).some((line) => line.includes(text))

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

beforeAll(async () => {
  redis = await startRedisServer()
  adapter = await startUpstashAdapter({ redisPort: redis.port, token: TOKEN, commandTimeoutMs: 3 * FAULT_MS })
  client = new Redis({ url: adapter.url, token: TOKEN, retry: false, enableTelemetry: false })
  await seed()
  backend = await startBackend({ MODEL_REPOSITORY: 'models', UPSTASH_REDIS_REST_URL: adapter.url, UPSTASH_REDIS_REST_TOKEN: TOKEN, DRIFT_FLUSH_MS: '500', DRIFT_REDIS_TIMEOUT_MS: String(DRIFT_REDIS_MS) })
  worker = await startWorker({
    BACKEND_URL: backend.url,
    API_KEYS: JSON.stringify([
      await entryOf('web', secret.web, ['predict'], 6_000),
      await entryOf('ops', secret.admin, ['admin'], 6_000),
      await entryOf('tight-stall', secret.tight.stall, ['predict'], 3),
      await entryOf('tight-outage', secret.tight.outage, ['predict'], 3),
    ]),
    UPSTASH_REDIS_REST_URL: adapter.url,
    UPSTASH_REDIS_REST_TOKEN: TOKEN,
    // REDIS_TIMEOUT_MS is left to its default; features get room so a busy machine does not degrade a healthy read.
    FEATURE_TIMEOUT_MS: String(FEATURES_MS),
  })
}, 120_000)

afterAll(async () => {
  redis?.signal('SIGCONT')
  await worker?.dispose()
  await backend?.stop()
  await adapter?.close()
  await redis?.stop()
  const rows = table.map((m) => `| ${m.fault} | ${m.dependency} | ${m.outcome} | ${m.latencyMs} ms | ${m.budgetMs} ms | ${m.recoveredMs === undefined ? '—' : `${m.recoveredMs} ms`} |`)
  writeFileSync('/tmp/readme-faults-redis.md', [
    `Redis faults (test/faults/redis.test.ts): each fault lasts ${FAULT_MS / 1000} s. Latency: the answer once the fault is on (past the rollout cache's TTL), end to end through workerd and the backend; budget: the Redis waits that request may spend (asserted: under budget + ${MARGIN_MS / 1000} s). Recovered after: from the fault's end until that row's check first passed (checked in table order).`,
    '',
    '| fault | dependency | outcome | measured latency | Redis budget | recovered after |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n'))
  console.log(['fault × dependency × outcome × latency', ...rows].join('\n'))
})

/** Healthy before the fault: everything answered from Redis, and each cache warm. */
const healthy = async () => {
  await until(async () => (await predict(secret.web)).headers.get('x-variant') === 'blue', { tries: 50, everyMs: 100 })
  const res = await predict(issued.known)
  expect(res.status).toBe(200)
  expect(res.headers.get('x-features-degraded')).toBeNull()
  expect((await admin(`/v1/models/${MODEL}/rollout/history`)).status).toBe(200)
  expect((await admin('/metrics')).status).toBe(200)
  await until(async () => (await driftReport()).status === 200, { tries: 50, everyMs: 100 })
}

const record = (fault: Fault, dependency: string, outcome: string, ms: number, budgetMs: number): Measured => {
  const measured = { fault, dependency, outcome, latencyMs: ms, budgetMs }
  table.push(measured)
  console.log(`${fault} ${dependency}: ${outcome} in ${ms} ms (budget ${budgetMs} ms)`)
  expect(ms, `${fault} ${dependency}`).toBeLessThan(budgetMs + MARGIN_MS)
  return measured
}

/** Each Redis use while the fault is on; what must be true afterwards, polled, per dependency. */
const duringFault = async (fault: Fault) => {
  const predictBudget = LIMITER_MS + REDIS_MS + FEATURES_MS
  const recoveries: Array<{ measured: Measured; check: () => Promise<boolean> }> = []
  const logsFrom = worker.logs.length

  // Rollout first: the first request past the cache's TTL is the one that asks Redis.
  const routed = await timed(() => predict(secret.web, `u-${fault}`))
  expect(routed.res.status).toBe(200)
  expect(routed.res.headers.get('x-variant'), 'the last known rollout, not the default').toBe('blue')
  expect(routed.res.headers.get('x-model-version')).toBe('1')
  recoveries.push({
    measured: record(fault, 'rollout (predict)', '200, stale rollout (X-Variant: blue)', routed.ms, predictBudget),
    check: async () => (await predict(secret.web)).headers.get('x-variant') === 'blue' && loggedSince(logsFrom, 'rollout state readable again'),
  })

  const features = await timed(() => predict(secret.web, `u-${fault}`))
  expect(features.res.status).toBe(200)
  expect(features.res.headers.get('x-features-degraded')).toBe('1')
  recoveries.push({
    measured: record(fault, 'features (predict)', '200, X-Features-Degraded: 1 (defaults)', features.ms, predictBudget),
    check: async () => {
      const res = await predict(secret.web, `u-after-${fault}`)
      return res.status === 200 && res.headers.get('x-features-degraded') === null
    },
  })

  // The review's reproduction: concurrent clients keep being answered while the fault lasts.
  const answers: Array<{ res: Response; ms: number }> = []
  const stopAt = performance.now() + LOAD_MS
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (performance.now() < stopAt) answers.push(await timed(() => predict(secret.web, `u-${fault}`)))
  }))
  expect(new Set(answers.map(({ res }) => `${res.status} ${res.headers.get('x-features-degraded')}`))).toEqual(new Set(['200 1']))
  expect(answers.length).toBeGreaterThanOrEqual(CLIENTS)
  record(fault, `${CLIENTS} concurrent clients (predict)`, `${answers.length} answers in ${LOAD_MS / 1000} s, all 200 degraded (slowest shown)`, Math.max(...answers.map((a) => a.ms)), predictBudget)

  const limited = []
  for (let i = 0; i < 4; i++) limited.push(await timed(() => predict(secret.tight[fault], `u-${fault}`)))
  expect(limited.map(({ res }) => res.status)).toEqual([200, 200, 200, 429])
  expect(limited.map(({ res }) => res.headers.get('ratelimit-limit'))).toEqual(['3', '3', '3', '3'])
  expect(limited.map(({ res }) => res.headers.get('ratelimit-remaining'))).toEqual(['2', '1', '0', '0'])
  expect(Number(limited[3]!.res.headers.get('retry-after'))).toBeGreaterThan(0)
  recoveries.push({
    measured: record(fault, 'rate limit (predict)', 'isolate limit: 3×200 then 429 + Retry-After, RateLimit-Limit: 3', Math.max(...limited.map((l) => l.ms)), predictBudget),
    check: async () => (await predict(secret.web)).status === 200 && loggedSince(logsFrom, 'rate limits are shared through Redis again'),
  })

  const cachedKey = await timed(() => predict(issued.known, `u-${fault}`))
  expect(cachedKey.res.status).toBe(200)
  record(fault, 'API key, cached (predict)', '200 from the isolate key cache', cachedKey.ms, REDIS_MS + predictBudget)

  const freshKey = await timed(() => predict(issued.fresh[fault], `u-${fault}`))
  expect(freshKey.res.status, 'a key that cannot be checked is a 503, never a 401').toBe(503)
  expect(freshKey.res.headers.get('retry-after')).toBe('1')
  recoveries.push({
    measured: record(fault, 'API key, never seen (predict)', '503 + Retry-After: 1', freshKey.ms, REDIS_MS),
    check: async () => (await predict(issued.fresh[fault], `u-after-${fault}`)).status === 200,
  })

  const history = await timed(() => admin(`/v1/models/${MODEL}/rollout/history`))
  expect(history.res.status).toBe(503)
  expect(history.res.headers.get('retry-after')).toBe('1')
  recoveries.push({
    measured: record(fault, 'rollout history (admin GET)', '503 + Retry-After: 1', history.ms, LIMITER_MS + REDIS_MS),
    check: async () => (await admin(`/v1/models/${MODEL}/rollout/history`)).status === 200,
  })

  const metrics = await timed(() => admin('/metrics'))
  expect(metrics.res.status).toBe(503)
  expect(metrics.res.headers.get('retry-after')).toBe('1')
  recoveries.push({
    measured: record(fault, 'normalization metrics (edge /metrics)', '503 + Retry-After: 1', metrics.ms, LIMITER_MS + REDIS_MS),
    check: async () => (await admin('/metrics')).status === 200,
  })

  const started = performance.now()
  const report = await driftReport()
  const reportBody = (await report.json()) as { error?: string }
  const reportMs = Math.round(performance.now() - started)
  expect(report.status).toBe(503)
  expect(report.headers.get('retry-after')).toBe('1')
  expect(reportBody.error).toMatch(/drift counts could not be read/)
  // The flush that met the stall names the budget it gave up after: DRIFT_REDIS_TIMEOUT_MS reached the store.
  if (fault === 'stall') await until(() => backend.logs.some((l) => l.msg === 'drift counts not flushed; kept for the next flush' && String(l.error).includes(`within ${DRIFT_REDIS_MS} ms`)), { tries: 100, everyMs: 50 })
  recoveries.push({
    measured: record(fault, 'drift counts (backend drift report)', '503 + Retry-After: 1, {"error"}', reportMs, DRIFT_MS),
    check: async () => (await driftReport()).status === 200,
  })

  const scrapeStarted = performance.now()
  const scrape = await backendMetrics()
  const scrapeText = await scrape.text()
  const scrapeMs = Math.round(performance.now() - scrapeStarted)
  expect(scrape.status).toBe(200)
  expect(scrapeText).not.toMatch(/drift_psi\{/)
  expect(scrapeText).toMatch(/queue_depth/)
  recoveries.push({
    measured: record(fault, 'drift counts (backend /metrics)', '200, drift gauges left out', scrapeMs, DRIFT_MS),
    check: async () => /drift_psi\{[^}]*version="2"/.test(await (await backendMetrics()).text()),
  })
  return recoveries
}

/** After the fault: each dependency back within a bounded number of polls; the time it took is recorded. */
const recovered = async (recoveries: Awaited<ReturnType<typeof duringFault>>, clearedAt: number) => {
  for (const { measured, check } of recoveries) {
    await until(check, { tries: 100, everyMs: 100 })
    measured.recoveredMs = Math.round(performance.now() - clearedAt)
  }
}

/**
 * Healthy first, then the fault for at least `FAULT_MS`, each use tried while it is on, then `clear` and the
 * polls for full service. `clear` must be safe to call twice (it runs again if the test failed).
 */
const withFault = async (fault: Fault, start: () => Promise<void>, clear: () => Promise<void>) => {
  await healthy()
  await start()
  const began = performance.now()
  try {
    await sleep(ROLLOUT_TTL_MS + 100)
    const recoveries = await duringFault(fault)
    // The fault outlasts every answer above: it ends only after them (and not before FAULT_MS).
    await sleep(Math.max(0, FAULT_MS - (performance.now() - began)))
    await clear()
    await recovered(recoveries, performance.now())
  } finally {
    await clear()
  }
}

const running = () => redis.child.exitCode === null && redis.child.signalCode === null

describe('Redis faults, end to end (workerd edge, real backend, redis-server behind the Upstash adapter)', () => {
  it(`STALL (SIGSTOP for ${FAULT_MS / 1000} s): every use answers within its budget, degraded or 503, and service returns after SIGCONT`, async () => {
    await withFault('stall', async () => redis.signal('SIGSTOP'), async () => redis.signal('SIGCONT'))
  }, 120_000)

  it(`OUTAGE (killed for ${FAULT_MS / 1000} s, restarted on its port, seeded again): the same, and service returns after the restart`, async () => {
    const port = redis.port
    await withFault('outage', () => redis.stop(), async () => {
      if (running()) return
      redis = await startRedisServer(port)
      await seed()
    })
  }, 120_000)
})
