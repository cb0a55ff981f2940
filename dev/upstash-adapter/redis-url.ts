/** Where the adapter's Redis is, from a `redis://[user:password@]host[:port][/db]` URL. */
export interface RedisTarget {
  host: string
  port: number
  username?: string
  password?: string
  db?: number
}

export const parseRedisUrl = (redisUrl: string): RedisTarget => {
  let url: URL
  try {
    url = new URL(redisUrl)
  } catch {
    throw new Error(`REDIS_URL ${JSON.stringify(redisUrl)} is not a URL`)
  }
  if (url.protocol === 'rediss:') throw new Error('rediss:// (TLS) is not supported by the local Upstash adapter')
  if (url.protocol !== 'redis:') throw new Error(`REDIS_URL must start with redis://, got ${url.protocol}//`)
  const db = url.pathname.replace(/^\//, '')
  if (db !== '' && !/^\d+$/.test(db)) throw new Error(`REDIS_URL database ${JSON.stringify(db)} is not a number`)
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: url.port === '' ? 6379 : Number(url.port),
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(db !== '' ? { db: Number(db) } : {}),
  }
}

/** The commands a fresh connection sends first (AUTH, SELECT), before any request's command. */
export const handshake = ({ username, password, db }: RedisTarget): string[][] => [
  ...(password !== undefined ? [username !== undefined ? ['AUTH', username, password] : ['AUTH', password]] : []),
  ...(db !== undefined && db !== 0 ? [['SELECT', String(db)]] : []),
]
