import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startUpstashAdapter, type UpstashAdapter } from '../../dev/upstash-adapter/server.ts'
import {
  createRespClient, encodeCommand, RedisConnectionError, RedisReplyError, RespParser, RespProtocolError, type RespValue,
} from '../../dev/upstash-adapter/resp.ts'
import { handshake, parseRedisUrl } from '../../dev/upstash-adapter/redis-url.ts'
import { until } from '../backend/support/backend-process.ts'
import { freePort } from '../support/ports.ts'
import { startRedisServer, type RedisServer } from './support/redis-server.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const TOKEN = 'adapter-test-token-0123456789'

interface Raw {
  status: number
  body: unknown
}

/** A raw request to the adapter; `body` strings are sent as-is, anything else as JSON. */
const raw = async (
  url: string,
  path: string,
  { body, method = 'POST', token = TOKEN, headers = {} }: { body?: unknown; method?: string; token?: string | null; headers?: Record<string, string> } = {},
): Promise<Raw> => {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(token !== null ? { authorization: `Bearer ${token}` } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body) } : {}),
  })
  return { status: res.status, body: await res.json() }
}

const b64 = (text: string) => Buffer.from(text).toString('base64')

describe('RESP2 codec', () => {
  it('encodes a command as an array of bulk strings, lengths in bytes', () => {
    expect(encodeCommand(['SET', 'k', 'é']).toString('utf8')).toBe('*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\né\r\n')
    expect(encodeCommand([Buffer.from([0, 13, 10])])).toEqual(Buffer.from('*1\r\n$3\r\n\x00\r\n\r\n'))
  })

  it('parses every reply type, fed one byte at a time', () => {
    const wire = Buffer.from(
      '+OK\r\n-NOSCRIPT No matching script. Please use EVAL.\r\n:-42\r\n$5\r\nhe\r\no\r\n$0\r\n\r\n$-1\r\n' +
        '*-1\r\n*0\r\n*3\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n-ERR inner\r\n',
    )
    const parser = new RespParser()
    const replies: RespValue[] = []
    for (const byte of wire) {
      parser.push(Buffer.from([byte]))
      for (let r = parser.next(); r !== undefined; r = parser.next()) replies.push(r)
    }
    expect(replies).toHaveLength(9)
    expect(replies[0]).toBe('OK')
    expect(replies[1]).toBeInstanceOf(RedisReplyError)
    expect((replies[1] as Error).message).toBe('NOSCRIPT No matching script. Please use EVAL.')
    expect(replies[2]).toBe(-42)
    expect(replies[3]).toEqual(Buffer.from('he\r\no'))
    expect(replies[4]).toEqual(Buffer.alloc(0))
    expect(replies[5]).toBeNull()
    expect(replies[6]).toBeNull()
    expect(replies[7]).toEqual([])
    const nested = replies[8] as RespValue[]
    expect(nested[0]).toEqual(Buffer.from('a'))
    expect(nested[1]).toEqual([1, null])
    expect((nested[2] as Error).message).toBe('ERR inner')
  })

  it('parses a large bulk string split across many chunks, and several replies in one chunk', () => {
    const value = randomBytes(1 << 20)
    const wire = Buffer.concat([Buffer.from(`$${value.length}\r\n`), value, Buffer.from('\r\n:7\r\n+PONG\r\n')])
    const parser = new RespParser()
    const replies: RespValue[] = []
    for (let at = 0; at < wire.length; at += 1000) {
      parser.push(wire.subarray(at, at + 1000))
      for (let r = parser.next(); r !== undefined; r = parser.next()) replies.push(r)
    }
    expect(replies).toHaveLength(3)
    expect((replies[0] as Buffer).equals(value)).toBe(true)
    expect(replies.slice(1)).toEqual([7, 'PONG'])
  })

  it('refuses bytes that are not RESP', () => {
    const parser = new RespParser()
    parser.push(Buffer.from('?what\r\n'))
    expect(() => parser.next()).toThrow(RespProtocolError)
  })
})

describe('Upstash REST adapter over a real redis-server', () => {
  let redisServer: RedisServer | undefined
  let adapter: UpstashAdapter | undefined
  let redis: Redis
  let url: string

  beforeAll(async () => {
    redisServer = await startRedisServer()
    adapter = await startUpstashAdapter({ redisUrl: redisServer.url, token: TOKEN })
    url = adapter.url
    redis = new Redis({ url, token: TOKEN })
  })

  afterAll(async () => {
    await adapter?.close()
    await redisServer?.stop()
  })

  describe('RESP client', () => {
    it('pipelines many calls and matches each reply to its call', async () => {
      const client = createRespClient({ port: redisServer!.port })
      try {
        const replies = await Promise.all(
          Array.from({ length: 500 }, (_, i) => client.call(i % 2 === 0 ? ['ECHO', `m${i}`] : ['INCRBY', 'resp:counter', String(i)])),
        )
        replies.forEach((reply, i) => {
          if (i % 2 === 0) expect(reply).toEqual(Buffer.from(`m${i}`))
          else expect(typeof reply).toBe('number')
        })
        expect(await client.call(['GET', 'resp:counter'])).toEqual(Buffer.from(String(250 * 250)))
        expect(await client.call(['NOPE'])).toBeInstanceOf(RedisReplyError)
        expect(client.pending).toBe(0)
      } finally {
        await client.close()
      }
      await expect(client.call(['PING'])).rejects.toBeInstanceOf(RedisConnectionError)
    })

    it('rejects calls cleanly when nothing listens', async () => {
      const client = createRespClient({ port: await freePort() })
      await expect(client.call(['PING'])).rejects.toThrow(/ECONNREFUSED/)
      expect(client.closed).toBe(true)
      await expect(client.call(['PING'])).rejects.toBeInstanceOf(RedisConnectionError)
      await client.close()
    })
  })

  describe('with the real @upstash/redis client (base64 encoding by default)', () => {
    it('sets and gets, null for a missing key', async () => {
      expect(await redis.set('t:greeting', 'hello world')).toBe('OK')
      expect(await redis.get('t:greeting')).toBe('hello world')
      expect(await redis.get('t:missing')).toBeNull()
      await redis.set('t:object', { a: 1, b: ['x'] })
      expect(await redis.get('t:object')).toEqual({ a: 1, b: ['x'] })
    })

    it('hset/hgetall comes back as an object', async () => {
      expect(await redis.hset('t:user:1', { age: 34, region: 'north', name: 'Zoë' })).toBe(3)
      expect(await redis.hgetall('t:user:1')).toEqual({ age: 34, region: 'north', name: 'Zoë' })
      expect(await redis.hgetall('t:user:none')).toBeNull()
    })

    it('incr, expire and ttl', async () => {
      expect(await redis.incr('t:n')).toBe(1)
      expect(await redis.incrby('t:n', 41)).toBe(42)
      expect(await redis.ttl('t:n')).toBe(-1)
      expect(await redis.expire('t:n', 100)).toBe(1)
      const ttl = await redis.ttl('t:n')
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(100)
    })

    it('pipeline', async () => {
      const p = redis.pipeline()
      p.set('t:p1', 'one')
      p.incr('t:p2')
      p.get('t:p1')
      p.hset('t:p3', { f: 'v' })
      p.hgetall('t:p3')
      expect(await p.exec()).toEqual(['OK', 1, 'one', 1, { f: 'v' }])
    })

    it('pipeline keeps a failing command as an error in place', async () => {
      await redis.set('t:str', 'not a number')
      const p = redis.pipeline()
      p.incr('t:str')
      p.get('t:str')
      const results = await p.exec({ keepErrors: true })
      expect(results[0]!.error).toMatch(/^ERR value is not an integer/)
      expect(results[1]).toEqual({ error: undefined, result: 'not a number' })
    })

    it('multi (transaction)', async () => {
      const tx = redis.multi()
      tx.set('t:tx', 'a')
      tx.append('t:tx', 'bc')
      tx.get('t:tx')
      tx.incr('t:txn')
      expect(await tx.exec()).toEqual(['OK', 3, 'abc', 1])
    })

    it('evalsha of an unknown sha fails with the NOSCRIPT error verbatim', async () => {
      const error = await redis.evalsha('0123456789abcdef0123456789abcdef01234567', [], []).then(() => undefined, (e: Error) => e)
      expect(error).toBeInstanceOf(Error)
      // @upstash/redis prefixes its own words; @upstash/ratelimit looks for the substring.
      expect(error!.message).toContain('NOSCRIPT No matching script')
    })

    it('script load and evalsha round trip', async () => {
      const sha = await redis.scriptLoad("return {KEYS[1], ARGV[1], tonumber(ARGV[2]) + 1, redis.call('SET', KEYS[1], ARGV[1])}")
      expect(sha).toMatch(/^[0-9a-f]{40}$/)
      expect(await redis.scriptExists(sha)).toEqual([1])
      expect(await redis.evalsha(sha, ['t:lua'], ['värde', 41])).toEqual(['t:lua', 'värde', 42, 'OK'])
      expect(await redis.get('t:lua')).toBe('värde')
    })

    it('a wrong token is rejected', async () => {
      const wrong = new Redis({ url, token: 'not-the-token', retry: false })
      await expect(wrong.get('t:greeting')).rejects.toThrow(/Unauthorized/)
    })

    it('large values round-trip intact', async () => {
      const big = randomBytes(3 << 20).toString('base64')
      expect(await redis.set('t:big', big)).toBe('OK')
      const back = await redis.get<string>('t:big')
      expect(back?.length).toBe(big.length)
      expect(back === big).toBe(true)
      expect(await redis.strlen('t:big')).toBe(big.length)
    })

    it('unicode values round-trip intact', async () => {
      const values = ['日本語テキスト', 'emoji 🚀👩‍👩‍👧', 'e\u0301 vs é', 'ℵ₀ ≠ ∞', 'line\nbreak\ttab "quoted" \\ back']
      for (const [i, value] of values.entries()) await redis.set(`t:u${i}`, value)
      expect(await redis.mget(...values.map((_, i) => `t:u${i}`))).toEqual(values)
      await redis.hset('t:uh', { 'ключ': '值' })
      expect(await redis.hgetall('t:uh')).toEqual({ 'ключ': '值' })
    })
  })

  describe('raw HTTP', () => {
    it('401 without a token, or with a wrong one', async () => {
      expect(await raw(url, '/', { body: ['GET', 'k'], token: null })).toEqual({ status: 401, body: { error: 'Unauthorized' } })
      expect(await raw(url, '/', { body: ['GET', 'k'], token: 'nope' })).toEqual({ status: 401, body: { error: 'Unauthorized' } })
      expect(await raw(url, '/get/k', { method: 'GET', token: null })).toEqual({ status: 401, body: { error: 'Unauthorized' } })
    })

    it('400 on malformed JSON, a body that is not a command, or an empty command', async () => {
      for (const body of ['{"nope', '{"a":1}', '"SET"', '[]', '[["nested"]]', '[null]', '']) {
        const res = await raw(url, '/', { body })
        expect(res.status, body).toBe(400)
        expect((res.body as { error: string }).error, body).toMatch(/^ERR /)
      }
      for (const path of ['/pipeline', '/multi-exec']) {
        for (const body of ['not json', '[]', '["GET","k"]', '[[]]']) {
          const res = await raw(url, path, { body })
          expect(res.status, `${path} ${body}`).toBe(400)
          expect(res.body, `${path} ${body}`).toHaveProperty('error')
        }
      }
    })

    it('POST / answers { result }, Redis errors 400 with their text verbatim', async () => {
      expect(await raw(url, '/', { body: ['SET', 'r:k', 'v'] })).toEqual({ status: 200, body: { result: 'OK' } })
      expect(await raw(url, '/', { body: ['GET', 'r:k'] })).toEqual({ status: 200, body: { result: 'v' } })
      expect(await raw(url, '/', { body: ['INCRBY', 'r:n', 5] })).toEqual({ status: 200, body: { result: 5 } })
      expect(await raw(url, '/', { body: ['EVALSHA', 'ffffffffffffffffffffffffffffffffffffffff', '0'] })).toEqual({
        status: 400,
        body: { error: 'NOSCRIPT No matching script. Please use EVAL.' },
      })
      const wrongType = await raw(url, '/', { body: ['HGET', 'r:k', 'f'] })
      expect(wrongType).toEqual({ status: 400, body: { error: 'WRONGTYPE Operation against a key holding the wrong kind of value' } })
    })

    it('HGETALL is a flat array', async () => {
      await raw(url, '/', { body: ['HSET', 'r:h', 'a', '1', 'b', '2'] })
      expect(await raw(url, '/', { body: ['HGETALL', 'r:h'] })).toEqual({ status: 200, body: { result: ['a', '1', 'b', '2'] } })
    })

    it('base64 encoding on: every string in the result, recursively; numbers and null stay', async () => {
      const base64 = { 'upstash-encoding': 'base64' }
      await raw(url, '/', { body: ['SET', 'r:e', 'héllo'] })
      expect(await raw(url, '/', { body: ['SET', 'r:e', 'héllo'], headers: base64 })).toEqual({ status: 200, body: { result: b64('OK') } })
      expect(await raw(url, '/', { body: ['GET', 'r:e'], headers: base64 })).toEqual({ status: 200, body: { result: b64('héllo') } })
      expect(await raw(url, '/', { body: ['GET', 'r:none'], headers: base64 })).toEqual({ status: 200, body: { result: null } })
      expect(await raw(url, '/', { body: ['EVAL', "return {'a', 1, {'b', 2}}", '0'], headers: base64 })).toEqual({
        status: 200,
        body: { result: [b64('a'), 1, [b64('b'), 2]] },
      })
      expect(await raw(url, '/pipeline', { body: [['GET', 'r:e'], ['INCR', 'r:e']], headers: base64 })).toEqual({
        status: 200,
        body: [{ result: b64('héllo') }, { error: 'ERR value is not an integer or out of range' }],
      })
      // off: plain strings
      expect(await raw(url, '/', { body: ['EVAL', "return {'a', 1, {'b', 2}}", '0'] })).toEqual({ status: 200, body: { result: ['a', 1, ['b', 2]] } })
    })

    it('binary values survive with base64 encoding (path-form POST body as the last argument)', async () => {
      const bytes = Buffer.from([0, 255, 13, 10, 128, 1])
      expect(await raw(url, '/set/r:bin', { body: bytes })).toEqual({ status: 200, body: { result: 'OK' } })
      expect(await raw(url, '/get/r:bin', { method: 'GET', headers: { 'upstash-encoding': 'base64' } })).toEqual({
        status: 200,
        body: { result: bytes.toString('base64') },
      })
    })

    it('path-form commands, URL-decoded segments', async () => {
      expect(await raw(url, '/set/r%3Apath/a%20b%2Fc')).toEqual({ status: 200, body: { result: 'OK' } })
      expect(await raw(url, '/get/r%3Apath', { method: 'GET' })).toEqual({ status: 200, body: { result: 'a b/c' } })
      expect(await raw(url, '/set/r:ex/v/EX/100')).toEqual({ status: 200, body: { result: 'OK' } })
      const ttl = await raw(url, '/ttl/r:ex', { method: 'GET' })
      expect((ttl.body as { result: number }).result).toBeGreaterThan(0)
      expect(await raw(url, '/get/r:path?ignored=1', { method: 'GET' })).toEqual({ status: 200, body: { result: 'a b/c' } })
      expect((await raw(url, '/get/%E0%A4%A', { method: 'GET' })).status).toBe(400)
      expect((await raw(url, '/nosuchcommand/x', { method: 'GET' })).status).toBe(400)
    })

    it('/pipeline answers one entry per command, 200 even with errors', async () => {
      expect(await raw(url, '/pipeline', { body: [['SET', 'r:p', 'x'], ['LPUSH', 'r:p', 'y'], ['GET', 'r:p'], ['BLPOP', 'r:l', '0']] })).toEqual({
        status: 200,
        body: [
          { result: 'OK' },
          { error: 'WRONGTYPE Operation against a key holding the wrong kind of value' },
          { result: 'x' },
          { error: 'ERR command "blpop" is not supported by the Upstash REST adapter' },
        ],
      })
    })

    it('/multi-exec runs a transaction; runtime errors per command, queue-time errors discard it', async () => {
      expect(await raw(url, '/multi-exec', { body: [['SET', 'r:m', 'x'], ['INCR', 'r:m'], ['GET', 'r:m']] })).toEqual({
        status: 200,
        body: [{ result: 'OK' }, { error: 'ERR value is not an integer or out of range' }, { result: 'x' }],
      })
      const aborted = await raw(url, '/multi-exec', { body: [['SET', 'r:m2', 'y'], ['NOSUCHCOMMAND']] })
      expect(aborted.status).toBe(400)
      expect((aborted.body as { error: string }).error).toMatch(/^ERR unknown command/)
      expect(await raw(url, '/', { body: ['EXISTS', 'r:m2'] })).toEqual({ status: 200, body: { result: 0 } })
      expect((await raw(url, '/multi-exec', { body: [['WATCH', 'r:m']] })).status).toBe(400)
    })

    it('refuses commands that would break the shared connection, and other methods', async () => {
      for (const command of [['MULTI'], ['SUBSCRIBE', 'c'], ['SELECT', '1'], ['CLIENT', 'REPLY', 'OFF'], ['XREAD', 'BLOCK', '0', 'STREAMS', 's', '$']]) {
        const res = await raw(url, '/', { body: command })
        expect(res.status, command.join(' ')).toBe(400)
        expect((res.body as { error: string }).error).toMatch(/not supported/)
      }
      expect((await raw(url, '/', { method: 'GET' })).status).toBe(405)
      expect((await raw(url, '/get/k', { method: 'DELETE' })).status).toBe(405)
      // still serving, connection state intact
      expect(await raw(url, '/', { body: ['PING'] })).toEqual({ status: 200, body: { result: 'PONG' } })
    })

    it('many concurrent requests get their own answers', async () => {
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => raw(url, '/', { body: ['ECHO', `c${i}`] })))
      answers.forEach((a, i) => expect(a).toEqual({ status: 200, body: { result: `c${i}` } }))
    })
  })

  describe('REDIS_URL', () => {
    it('parses host, port, credentials and database; rediss:// is refused', () => {
      const target = parseRedisUrl('redis://user:p%40ss@localhost:6390/3')
      expect(target).toEqual({ host: 'localhost', port: 6390, username: 'user', password: 'p@ss', db: 3 })
      expect(handshake(target)).toEqual([['AUTH', 'user', 'p@ss'], ['SELECT', '3']])
      expect(parseRedisUrl('redis://127.0.0.1')).toEqual({ host: '127.0.0.1', port: 6379 })
      expect(handshake(parseRedisUrl('redis://127.0.0.1/0'))).toEqual([])
      expect(() => parseRedisUrl('rediss://h:1')).toThrow(/TLS/)
      expect(() => parseRedisUrl('http://h:1')).toThrow(/redis:\/\//)
    })

    it('selects the database from the URL on every connection', async () => {
      const db2 = await startUpstashAdapter({ redisUrl: `${redisServer!.url}/2`, token: TOKEN })
      try {
        expect(await raw(db2.url, '/', { body: ['SET', 'r:db', 'two'] })).toEqual({ status: 200, body: { result: 'OK' } })
        expect(await raw(url, '/', { body: ['GET', 'r:db'] })).toEqual({ status: 200, body: { result: null } })
        expect(await raw(db2.url, '/', { body: ['GET', 'r:db'] })).toEqual({ status: 200, body: { result: 'two' } })
      } finally {
        await db2.close()
      }
    })
  })

  describe('CLI entry', () => {
    it('prints {"msg":"listening","url"} and serves; SIGTERM stops it', async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'dev/upstash-adapter/main.ts'], {
        cwd: ROOT,
        env: { ...process.env, REDIS_URL: redisServer!.url, UPSTASH_ADAPTER_TOKEN: TOKEN, UPSTASH_ADAPTER_PORT: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      try {
        const listening = await new Promise<{ msg: string; url: string }>((resolve, reject) => {
          createInterface({ input: child.stdout! }).on('line', (line) => {
            const entry = JSON.parse(line) as { msg: string; url: string }
            if (entry.msg === 'listening') resolve(entry)
          })
          void exited.then((code) => reject(new Error(`adapter exited with ${code}`)))
        })
        expect(listening.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
        const cli = new Redis({ url: listening.url, token: TOKEN })
        expect(await cli.echo('via cli')).toBe('via cli')
      } finally {
        if (child.exitCode === null) process.kill(child.pid!, 'SIGTERM')
      }
      expect(await exited).toBe(0)
    })

    it('refuses to start without a token', async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'dev/upstash-adapter/main.ts'], {
        cwd: ROOT,
        env: { ...process.env, REDIS_URL: redisServer!.url, UPSTASH_ADAPTER_TOKEN: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
      expect(code).toBe(1)
      expect(out).toMatch(/UPSTASH_ADAPTER_TOKEN is required/)
    })
  })
})

describe('when redis-server stops', () => {
  let redisServer: RedisServer | undefined
  let patient: UpstashAdapter | undefined
  let impatient: UpstashAdapter | undefined

  beforeAll(async () => {
    redisServer = await startRedisServer()
    patient = await startUpstashAdapter({ redisUrl: redisServer.url, token: TOKEN })
    impatient = await startUpstashAdapter({ redisUrl: redisServer.url, token: TOKEN, commandTimeoutMs: 200 })
  })

  afterAll(async () => {
    redisServer?.signal('SIGCONT')
    await patient?.close()
    await impatient?.close()
    await redisServer?.stop()
  })

  it('a hung Redis fails requests after the command timeout; a killed one fails in-flight and new requests with { error }', async () => {
    const redis = new Redis({ url: patient!.url, token: TOKEN, retry: false })
    expect(await redis.set('d:k', 'v')).toBe('OK')
    expect(await raw(impatient!.url, '/', { body: ['GET', 'd:k'] })).toEqual({ status: 200, body: { result: 'v' } })

    redisServer!.signal('SIGSTOP')
    const inFlight = raw(patient!.url, '/', { body: ['GET', 'd:k'] })
    const inFlightClient = redis.get('d:k').then(() => undefined, (e: Error) => e)
    await until(() => patient!.stats().pending >= 2, { tries: 400, everyMs: 25 })

    const hung = await raw(impatient!.url, '/', { body: ['GET', 'd:k'] })
    expect(hung.status).toBe(503)
    expect((hung.body as { error: string }).error).toMatch(/did not answer/)

    await redisServer!.stop('SIGKILL')
    const failed = await inFlight
    expect(failed.status).toBe(503)
    expect((failed.body as { error: string }).error).toMatch(/^ERR redis connection .* (closed|failed)/)
    expect((await inFlightClient)?.message).toMatch(/redis connection/)

    const refused = await raw(patient!.url, '/', { body: ['GET', 'd:k'] })
    expect(refused.status).toBe(503)
    expect((refused.body as { error: string }).error).toMatch(/ECONNREFUSED/)
    const pipeline = await raw(patient!.url, '/pipeline', { body: [['GET', 'd:k']] })
    expect(pipeline.status).toBe(503)
    const tx = await raw(patient!.url, '/multi-exec', { body: [['GET', 'd:k']] })
    expect(tx.status).toBe(503)
    await expect(redis.get('d:k')).rejects.toThrow(/ECONNREFUSED/)
    // the adapter itself keeps answering
    expect((await raw(patient!.url, '/', { body: ['GET', 'd:k'], token: 'wrong' })).status).toBe(401)
  })

  it('serves again once Redis is back on the same port', async () => {
    redisServer = await startRedisServer(redisServer!.port)
    expect(await raw(patient!.url, '/', { body: ['SET', 'd:k', 'back'] })).toEqual({ status: 200, body: { result: 'OK' } })
    expect(await new Redis({ url: patient!.url, token: TOKEN }).get('d:k')).toBe('back')
  })
})
