import { Command } from 'commander'
import { createKey, createKeyArgs, redisFromEnv } from '../../infra/keys/create-key.ts'
import { API_KEYS_HASH } from '../../edge/stores/keys/upstash.ts'
import { type KeyEntry, SCOPES, keyEntrySchema, rateLimitOf } from '../../edge/stores/keys/api-key.ts'
import { LOCAL_KEYS_FILE, readLocalKeys, writeLocalKeys } from '../../dev/local-keys.ts'

/**
 * `edge-infer keys create|list|revoke`: API keys in the local stack's keys file (dev/local-keys.ts)
 * or, with --redis, in the Redis hash the edge reads (edge/stores/keys/upstash.ts).
 */

/** The local keys file as help names it: the same words on every machine (the docs are generated from help). */
const LOCAL_FILE_HELP = '.dev.keys.json at the repository root (EDGE_INFER_LOCAL_KEYS names another)'
const REDIS_HELP = `the Redis hash "${API_KEYS_HASH}" at UPSTASH_REDIS_REST_URL with UPSTASH_REDIS_REST_TOKEN`

/** Entries of the Redis hash by digest; what does not parse as an entry is left out, as the edge leaves it out. */
const redisEntries = async (command: Command): Promise<{ redis: NonNullable<ReturnType<typeof redisFromEnv>>; entries: KeyEntry[] }> => {
  const redis = redisFromEnv()
  if (!redis) return command.error('error: --redis needs UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN in the environment', { exitCode: 2 })
  const stored = (await redis.hgetall<Record<string, unknown>>(API_KEYS_HASH)) ?? {}
  const entries = Object.values(stored).flatMap((value) => {
    const parsed = keyEntrySchema.safeParse(typeof value === 'string' ? JSON.parse(value) : value)
    return parsed.success ? [parsed.data] : []
  })
  return { redis, entries }
}

/** The key's limit: its exact requests per minute, or the `[[ratelimits]]` binding that limits it. */
const rateText = (entry: KeyEntry): string => {
  const limit = rateLimitOf(entry)
  return limit.binding ?? `${limit.perMinute}/min`
}

const line = (entry: KeyEntry): string =>
  [entry.name.padEnd(20), entry.scopes.join(',').padEnd(24), rateText(entry).padEnd(12), `tenant ${entry.tenant ?? entry.name}`.padEnd(24), `sha256 ${entry.hash.slice(0, 12)}…`].join(' ')

const create = (): Command => new Command('create')
  .description('create an API key: print it once and the entry the edge needs (API_KEYS secret, --redis or --local)')
  // Required, but checked by createKeyArgs: commander would check them before it refuses an unknown flag.
  .option('--name <name>', 'required: who the key is for, e.g. web, ios (letters, digits, ".", "_", "-"; at most 64)')
  .option('--scopes <scopes>', `required: comma-separated ${SCOPES.join(', ')}`)
  .option('--tenant <tenant>', "whose predictions the key's are (default: the name)")
  .option('--rate <per-minute>', 'requests per minute for this key, counted exactly (default 600)')
  .option('--rate-limit <binding>', 'exact (default: --rate), or the name of a [[ratelimits]] binding in wrangler.toml (RATE_LIMIT_...) whose limit and period serve the key, per Cloudflare location, with no Redis round trip')
  .option('--env <tag>', "environment tag in the key's prefix, e.g. live, test, local (default live)")
  .option('--json', 'print one JSON object {"key", "entry"} instead of labelled text')
  .option('--redis', `store the entry in ${REDIS_HELP}`)
  .option('--local', `add the key to the local stack's keys file, ${LOCAL_FILE_HELP}; npm start's edge accepts it from its next start`)
  .addHelpText('after', `
Prints the key once; it is stored nowhere but in the local keys file with --local. With --redis the
edge accepts it at once, without a redeploy; a name held by API_KEYS (when set here) is refused.`)
  .action(async (flags, command: Command) => {
    let args
    try {
      args = createKeyArgs(flags)
    } catch (err) {
      return command.error(`error: ${(err as Error).message}`, { exitCode: 2 })
    }
    process.exitCode = await createKey(args)
  })

const list = (): Command => new Command('list')
  .description(`list the keys of the local keys file, ${LOCAL_FILE_HELP}, or with --redis of ${REDIS_HELP}; the keys themselves are never shown, only their entries`)
  .option('--redis', `list ${REDIS_HELP}`)
  .option('--json', 'print the entries as one JSON array')
  .action(async (flags: { redis?: boolean; json?: boolean }, command: Command) => {
    const entries = flags.redis ? (await redisEntries(command)).entries : readLocalKeys().keys.map((k) => k.entry)
    const sorted = entries.toSorted((a, b) => a.name.localeCompare(b.name))
    if (flags.json) process.stdout.write(`${JSON.stringify(sorted)}\n`)
    else process.stdout.write(sorted.length === 0 ? `no keys in ${flags.redis ? `Redis hash "${API_KEYS_HASH}"` : LOCAL_KEYS_FILE}\n` : `${sorted.map(line).join('\n')}\n`)
  })

const revoke = (): Command => new Command('revoke')
  .description(`revoke the key named <name>: remove it from the local keys file, or with --redis from ${REDIS_HELP} (the edge stops accepting it within its cache's 30 s)`)
  .argument('<name>', 'the name the key was created with')
  .option('--redis', `revoke from ${REDIS_HELP}`)
  .action(async (name: string, flags: { redis?: boolean }, command: Command) => {
    if (flags.redis) {
      const { redis, entries } = await redisEntries(command)
      const found = entries.filter((e) => e.name === name)
      if (found.length === 0) return command.error(`error: Redis hash "${API_KEYS_HASH}" holds no key named "${name}"`, { exitCode: 1 })
      await redis.hdel(API_KEYS_HASH, ...found.map((e) => e.hash))
    } else {
      const current = readLocalKeys()
      const kept = current.keys.filter((k) => k.entry.name !== name)
      if (kept.length === current.keys.length) return command.error(`error: ${LOCAL_KEYS_FILE} holds no key named "${name}"`, { exitCode: 1 })
      writeLocalKeys({ keys: kept })
    }
    process.stdout.write(`revoked "${name}"${flags.redis ? ` from Redis hash "${API_KEYS_HASH}"` : ` from ${LOCAL_KEYS_FILE}; a running npm start accepts it until its next start`}\n`)
  })

export const keysCommand = (): Command => new Command('keys')
  .description('API keys: create, list, revoke (local keys file, or Redis with --redis)')
  .addCommand(create())
  .addCommand(list())
  .addCommand(revoke())
