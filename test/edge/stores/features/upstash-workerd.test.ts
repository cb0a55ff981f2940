import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Redis } from '@upstash/redis'
import { Miniflare } from 'miniflare'
import { bundledWorkerOptions } from '../../../../dev/workerd.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startUpstashAdapter, type UpstashAdapter } from '../../../../dev/upstash-adapter/server.ts'
import { startRedisServer, type RedisServer } from '../../../dev/support/redis-server.ts'

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url))
const ENTRY = 'test/edge/stores/features/fixtures/upstash-worker.ts'
const TOKEN = 'feature-store-workerd-token-0123456789'

let redis: RedisServer
let adapter: UpstashAdapter
let outdir: string
/** The modules wrangler bundled (the source map's list: the minified bundle carries no path comments). */
let sources: string[]
let mf: Miniflare
let url: string

beforeAll(async () => {
  redis = await startRedisServer()
  adapter = await startUpstashAdapter({ redisPort: redis.port, token: TOKEN })
  await new Redis({ url: adapter.url, token: TOKEN, enableTelemetry: false }).hset('features:user:u-1', { account_age_months: '48', num_products: '3' })
  // Bundled exactly as a deploy would (wrangler's esbuild, workerd conditions).
  outdir = await mkdtemp(join(tmpdir(), 'feature-worker-'))
  await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules/wrangler/bin/wrangler.js'), 'deploy', '--dry-run', '--outdir', outdir, ENTRY], {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' },
  })
  sources = (JSON.parse(await readFile(join(outdir, 'upstash-worker.js.map'), 'utf8')) as { sources: string[] }).sources
  mf = new Miniflare(await bundledWorkerOptions({
    bundle: join(outdir, 'upstash-worker.js'),
    bindings: { UPSTASH_REDIS_REST_URL: adapter.url, UPSTASH_REDIS_REST_TOKEN: TOKEN },
  }))
  url = (await mf.ready).toString().replace(/\/$/, '')
})

afterAll(async () => {
  await mf?.dispose()
  await adapter?.close()
  await redis?.stop()
  if (outdir) await rm(outdir, { recursive: true, force: true })
})

describe('UpstashFeatureStore bundled by wrangler, in real workerd', () => {
  it('wrangler resolves plain @upstash/redis (no workerd export condition) to its Node entry', () => {
    expect(sources.some((source) => source.endsWith('node_modules/@upstash/redis/nodejs.mjs'))).toBe(true)
  })

  it('reads a hash through the adapter, again on later requests (no stale fetch binding)', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/?entity=user&id=u-1`)
      expect(await res.json()).toEqual({ values: { account_age_months: '48', num_products: '3' } })
    }
    expect(await (await fetch(`${url}/?entity=user&id=nobody`)).json()).toEqual({ values: null })
  })

  it('the bundle carries the embedded default seed (edge/stores/features/demo-seed.json)', async () => {
    expect(await (await fetch(`${url}/seed`)).json()).toEqual(['u-1', 'u-2', 'u-3', 'u-4', 'u-5'])
  })

  it('a request that Redis cannot answer is aborted and rejects (not resolved with the abort reason)', async () => {
    redis.signal('SIGSTOP')
    try {
      const res = await fetch(`${url}/?entity=user&id=u-1&abortMs=200`)
      expect(res.status).toBe(500)
      expect(((await res.json()) as { error: string }).error).toMatch(/abort|timeout/i)
    } finally {
      redis.signal('SIGCONT')
    }
    expect(await (await fetch(`${url}/?entity=user&id=u-1`)).json()).toEqual({ values: { account_age_months: '48', num_products: '3' } })
  })
})
