import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { apiKeysSchema, hashApiKey, isApiKey } from '../../../edge/stores/keys/api-key.ts'
import type { AppEnv } from '../../../edge/app.ts'
import { auth } from '../../../edge/pipeline/auth/index.ts'
import { onError } from '../../../edge/on-error.ts'
import { isolateCache } from '../../../edge/isolate.ts'
import { isolate } from '../../../edge/pipeline/isolate/index.ts'
import { readLocalKeys } from '../../../dev/local-keys.ts'
import { runCreateKey } from './support/create-key-process.ts'

const createKey = (...args: string[]) => runCreateKey(args)

describe('keys:create', () => {
  it('prints a labelled key once and an entry whose hash matches it', async () => {
    const { code, stdout, stderr } = await createKey('--name', 'web', '--scopes', 'predict,admin', '--rate', '120')
    expect(code).toBe(0)
    expect(stderr).toBe('')
    const lines = stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^API key for "web" \(shown only now/)
    const key = lines[1]
    expect(isApiKey(key)).toBe(true)
    expect(key).toMatch(/^ei_live_/)
    expect(stdout.split(key)).toHaveLength(2)
    expect(lines[3]).toMatch(/^Entry for the API_KEYS secret/)
    const entry = JSON.parse(lines[4])
    expect(entry).toEqual({ name: 'web', hash: await hashApiKey(key), scopes: ['predict', 'admin'], rate_limit_per_minute: 120 })

    // The printed entry, stored as API_KEYS, authenticates the printed key.
    const app = new Hono<AppEnv>()
    app.use('*', isolate({ isolateFor: isolateCache() }), auth({ scope: 'admin' }))
    app.get('/', (c) => c.json(c.get('caller')))
    app.onError(onError)
    const res = await app.request('/', { headers: { 'x-api-key': key } }, { API_KEYS: JSON.stringify([entry]) })
    expect(await res.json()).toEqual({ name: 'web', tenant: 'web', scopes: ['predict', 'admin'], rateLimitPerMinute: 120 })
  })

  it('defaults the rate, takes an environment tag, prints JSON on request and accepts a leading --', async () => {
    const { code, stdout } = await createKey('--', '--name=ios', '--scopes', 'predict', '--env', 'local', '--json')
    expect(code).toBe(0)
    const { key, entry } = JSON.parse(stdout) as { key: string; entry: unknown }
    expect(key).toMatch(/^ei_local_/)
    expect(apiKeysSchema.parse([entry])[0]).toEqual({ name: 'ios', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 600 })
  })

  it("puts --tenant in the entry, and the key's caller carries it", async () => {
    const { code, stdout } = await createKey('--name', 'shop-labels', '--tenant', 'shop', '--scopes', 'feedback', '--json')
    expect(code).toBe(0)
    const { key, entry } = JSON.parse(stdout) as { key: string; entry: unknown }
    expect(entry).toEqual({ name: 'shop-labels', tenant: 'shop', hash: await hashApiKey(key), scopes: ['feedback'], rate_limit_per_minute: 600 })
    const app = new Hono<AppEnv>()
    app.use('*', isolate({ isolateFor: isolateCache() }), auth({ scope: 'feedback' }))
    app.get('/', (c) => c.json(c.get('caller')))
    const res = await app.request('/', { headers: { 'x-api-key': key } }, { API_KEYS: JSON.stringify([entry]) })
    expect(await res.json()).toMatchObject({ name: 'shop-labels', tenant: 'shop' })
  })

  it('puts a [[ratelimits]] binding named by --rate-limit in the entry instead of a rate, and the caller carries it', async () => {
    const { code, stdout } = await createKey('--name', 'trial', '--scopes', 'predict', '--rate-limit', 'RATE_LIMIT_FREE', '--json')
    expect(code).toBe(0)
    const { key, entry } = JSON.parse(stdout) as { key: string; entry: unknown }
    expect(entry).toEqual({ name: 'trial', hash: await hashApiKey(key), scopes: ['predict'], rate_limit: 'RATE_LIMIT_FREE' })
    const app = new Hono<AppEnv>()
    app.use('*', isolate({ isolateFor: isolateCache() }), auth({ scope: 'predict' }))
    app.get('/', (c) => c.json(c.get('caller')))
    const res = await app.request('/', { headers: { 'x-api-key': key } }, { API_KEYS: JSON.stringify([entry]) })
    expect(await res.json()).toEqual({ name: 'trial', tenant: 'trial', scopes: ['predict'], rateLimitBinding: 'RATE_LIMIT_FREE' })
  })

  it('refuses bad arguments with a helpful message and exit code 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--scopes', 'predict'], /--name is required/],
      [['--name', 'web', '--scopes', 'predict,root'], /unknown scope "root" in --scopes; expected predict, admin/],
      [['--name', 'web', '--scopes', 'predict', '--rate', '1.5'], /--rate must be a positive whole number/],
      [['--name', 'has space', '--scopes', 'predict'], /--name must be 1-64 letters/],
      [['--name', 'web', '--tenant', 'a:b', '--scopes', 'predict'], /--tenant must be 1-64 letters/],
      [['--name', 'web', '--name', 'ios', '--scopes', 'predict'], /--name is given more than once/],
      [['--name', 'web', '--scopes', 'predict', '--verbose'], /Unknown option '--verbose'/],
      [['--name', 'web', '--scopes', 'predict', '--rate', '60', '--rate-limit', 'RATE_LIMIT_FREE'], /--rate cannot be given with --rate-limit RATE_LIMIT_FREE: a binding's limit and period are its simple/],
      [['--name', 'web', '--scopes', 'predict', '--rate-limit', 'free'], /--rate-limit must be "exact" or the name of a \[\[ratelimits\]\] binding in wrangler.toml, which starts with RATE_LIMIT_/],
    ]
    // Each case is a Node process with tsx: a handful, two at a time, keeps this quick on 2 cores.
    const results = []
    for (let i = 0; i < cases.length; i += 2) results.push(...(await Promise.all(cases.slice(i, i + 2).map(([args]) => createKey(...args)))))
    for (const [i, { code, stdout, stderr }] of results.entries()) {
      const [args, message] = cases[i]
      expect(code, args.join(' ')).toBe(2)
      expect(stdout, args.join(' ')).toBe('')
      expect(stderr, args.join(' ')).toMatch(message)
      expect(stderr).toContain('usage: npm run keys:create')
    }
  })

  it('refuses --redis without the Upstash URL and token, printing no key', async () => {
    const { code, stdout, stderr } = await runCreateKey(['--name', 'web', '--scopes', 'predict', '--redis'], { UPSTASH_REDIS_REST_URL: '', UPSTASH_REDIS_REST_TOKEN: '' })
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/--redis needs UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN/)
  })

  it('refuses --redis with a name the API_KEYS secret in its environment holds, printing no key', async () => {
    const API_KEYS = JSON.stringify([{ name: 'web', hash: 'a'.repeat(64), scopes: ['predict'], rate_limit_per_minute: 60 }])
    const { code, stdout, stderr } = await runCreateKey(['--name', 'web', '--scopes', 'predict', '--redis'], { API_KEYS, UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:9', UPSTASH_REDIS_REST_TOKEN: 'unused' })
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/--name "web" is taken by an entry of API_KEYS/)
  })

  it('adds the key to the local stack keys file with --local, and refuses a name it holds', async () => {
    const EDGE_INFER_LOCAL_KEYS = join(mkdtempSync(join(tmpdir(), 'keys-local-')), '.dev.keys.json')
    const { code, stdout } = await runCreateKey(['--name', 'web', '--scopes', 'predict', '--local'], { EDGE_INFER_LOCAL_KEYS })
    expect(code).toBe(0)
    const key = stdout.split('\n')[1]
    expect(stdout).toMatch(/^API key for "web" \(kept in .*; npm start's edge accepts it from its next start\)/)
    expect(readLocalKeys(EDGE_INFER_LOCAL_KEYS).keys).toEqual([{ key, entry: { name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 600 } }])
    const again = await runCreateKey(['--name', 'web', '--scopes', 'predict', '--local'], { EDGE_INFER_LOCAL_KEYS })
    expect(again.code).toBe(2)
    expect(again.stderr).toMatch(/already holds a key named "web"/)
    expect(again.stdout).toBe('')
    expect((await runCreateKey(['--name', 'web', '--scopes', 'predict', '--local', '--redis'])).stderr).toMatch(/--redis and --local name two different places/)
  })

  it('prints usage for --help', async () => {
    const { code, stdout } = await createKey('--help')
    expect(code).toBe(0)
    expect(stdout).toMatch(/^usage: npm run keys:create -- --name <name> --scopes/)
  })
})
