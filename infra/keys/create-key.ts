import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis } from '@upstash/redis'
import { API_KEYS_HASH } from '../../edge/stores/keys/upstash.ts'
import { EXACT_RATE_LIMIT, type KeyEntry, type KeyRateLimit, SCOPES, type Scope, generateApiKey, hashApiKey, keyEntrySchema, rateLimitOf } from '../../edge/stores/keys/api-key.ts'
import { KeyConfigError, parseApiKeys } from '../../edge/stores/keys/key-store.ts'
import { LOCAL_KEYS_FILE, addLocalKey } from '../../dev/local-keys.ts'

/**
 * `npm run keys:create -- --name web --scopes predict[,admin] [--tenant shop] [--rate 600 | --rate-limit RATE_LIMIT_FREE] [--env live] [--json] [--redis]`
 *
 * Creates an API key: prints the key once (it is stored nowhere) and the entry to add to the
 * `API_KEYS` secret, which holds only the key's SHA-256 hash. With `--redis` the entry is written
 * to the Redis the edge shares (UPSTASH_REDIS_REST_URL / _TOKEN) instead, live without a redeploy;
 * a name that the `API_KEYS` secret in this environment holds is then refused, as the edge would.
 * With `--local` the key and its entry are added to the local stack's keys file, which `npm start`
 * gives its edge on the next start.
 */
export const CREATE_KEY_USAGE = `usage: npm run keys:create -- --name <name> --scopes <scope>[,<scope>] [--tenant <tenant>] [--rate <per-minute> | --rate-limit <binding>] [--env <tag>] [--json] [--redis | --local]

  --name    who the key is for, e.g. web, ios (letters, digits, ".", "_", "-"; at most 64)
  --scopes  comma-separated: ${SCOPES.join(', ')}
  --tenant  whose predictions the key's are: keys of one tenant label each other's (default: the name)
  --rate    requests per minute for this key, counted exactly (default 600)
  --rate-limit  which limiter serves the key: exact (default: --rate, over a sliding minute, shared through Redis)
            or the name of a [[ratelimits]] binding in wrangler.toml (RATE_LIMIT_...): its limit and period,
            per Cloudflare location, no Redis round trip; --rate cannot be given with a binding
  --env     environment tag in the key's prefix, e.g. live, test, local (default live)
  --json    print one JSON object {"key", "entry"} instead of labelled text
  --redis   store the entry in Redis (hash "${API_KEYS_HASH}") at UPSTASH_REDIS_REST_URL with UPSTASH_REDIS_REST_TOKEN;
            a name held by API_KEYS (when set in the environment) is refused
  --local   add the key to the local stack's keys file (${LOCAL_KEYS_FILE}); npm start's edge accepts it from its next start`

export class UsageError extends Error {}

export interface CreateKeyArgs {
  name: string
  tenant?: string
  scopes: Scope[]
  /** Requests per minute, counted exactly; or the `[[ratelimits]]` binding that limits the key instead. */
  limit: KeyRateLimit
  env: string
  json: boolean
  redis: boolean
  local: boolean
}

const parse = (argv: string[]): CreateKeyArgs | 'help' => {
  let parsed
  try {
    parsed = parseArgs({
      args: argv[0] === '--' ? argv.slice(1) : argv,
      options: {
        name: { type: 'string' },
        scopes: { type: 'string' },
        tenant: { type: 'string' },
        rate: { type: 'string' },
        'rate-limit': { type: 'string' },
        env: { type: 'string' },
        json: { type: 'boolean' },
        redis: { type: 'boolean' },
        local: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
      tokens: true,
    })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  const { values, tokens } = parsed
  if (values.help) return 'help'
  const seen = new Set<string>()
  for (const token of tokens) {
    if (token.kind !== 'option') continue
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given more than once`)
    seen.add(token.name)
  }
  const { 'rate-limit': rateLimit, ...rest } = values
  return createKeyArgs({ ...rest, ...(rateLimit === undefined ? {} : { rateLimit }) })
}

/** The flags, parsed by node:util here or by commander in `edge-infer keys create`, before they are checked. */
export interface CreateKeyFlags {
  name?: string
  scopes?: string
  tenant?: string
  rate?: string
  rateLimit?: string
  env?: string
  json?: boolean
  redis?: boolean
  local?: boolean
}

/** Checks the flags of a key to create; throws UsageError on anything it cannot use. */
export const createKeyArgs = (values: CreateKeyFlags): CreateKeyArgs => {
  if (values.redis && values.local) throw new UsageError('--redis and --local name two different places; give one')
  if (values.name === undefined) throw new UsageError('--name is required')
  if (values.scopes === undefined) throw new UsageError(`--scopes is required (${SCOPES.join(', ')})`)
  const scopes = values.scopes.split(',').map((scope) => scope.trim())
  for (const scope of scopes) {
    if (!(SCOPES as readonly string[]).includes(scope)) throw new UsageError(`unknown scope "${scope}" in --scopes; expected ${SCOPES.join(', ')}`)
  }
  if (new Set(scopes).size !== scopes.length) throw new UsageError('--scopes repeats a scope')

  const binding = values.rateLimit !== undefined && values.rateLimit !== EXACT_RATE_LIMIT
  if (binding && values.rate !== undefined) throw new UsageError(`--rate cannot be given with --rate-limit ${values.rateLimit}: a binding's limit and period are its simple = { limit, period } in wrangler.toml`)
  const rateText = values.rate ?? '600'
  if (!binding && !/^[1-9][0-9]*$/.test(rateText)) throw new UsageError(`--rate must be a positive whole number of requests per minute, got "${rateText}"`)
  const env = values.env ?? 'live'
  if (!/^[a-z0-9]{1,16}$/.test(env)) throw new UsageError(`--env must be 1-16 lowercase letters or digits, got "${env}"`)

  const entry = keyEntrySchema.safeParse({ name: values.name, ...(values.tenant === undefined ? {} : { tenant: values.tenant }), hash: '0'.repeat(64), scopes, ...limitFields(binding ? values.rateLimit! : Number(rateText)) })
  if (!entry.success) {
    const issue = entry.error.issues[0]!
    const flag = { name: '--name', tenant: '--tenant', scopes: '--scopes', rate_limit: '--rate-limit', rate_limit_per_minute: '--rate' }[String(issue.path[0])] ?? String(issue.path[0])
    throw new UsageError(`${flag} ${issue.message}`)
  }
  return { name: values.name, ...(values.tenant === undefined ? {} : { tenant: values.tenant }), scopes: scopes as Scope[], limit: rateLimitOf(entry.data), env, json: values.json ?? false, redis: values.redis ?? false, local: values.local ?? false }
}

/** The entry's fields for a limit: requests per minute (the default mode, left unsaid), or a binding's name. */
const limitFields = (limit: number | string): { rate_limit_per_minute: number } | { rate_limit: string } =>
  typeof limit === 'number' ? { rate_limit_per_minute: limit } : { rate_limit: limit }

export const redisFromEnv = (): Redis | undefined => {
  const { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token } = process.env
  return url && token ? new Redis({ url, token, retry: false, enableTelemetry: false }) : undefined
}

/**
 * Why a Redis key may not take `name`: the edge refuses a Redis key named like an entry of the
 * `API_KEYS` secret (keys are counted and rate-limited by name). Only the secret given to this
 * process can be checked here; the edge checks the one it has.
 */
const clashWithSecret = (name: string): string | undefined => {
  const secret = process.env.API_KEYS
  if (secret === undefined || secret.trim() === '') return undefined
  try {
    return parseApiKeys(secret).some((entry) => entry.name === name) ? `--name "${name}" is taken by an entry of API_KEYS; the edge refuses a Redis key with the name of one of the secret's: choose another` : undefined
  } catch (err) {
    if (!(err instanceof KeyConfigError)) throw err
    return err.message
  }
}

/** Creates the key and prints it; answers the exit code (2 when the environment cannot take it). */
export const createKey = async (args: CreateKeyArgs): Promise<number> => {
  const clash = args.redis ? clashWithSecret(args.name) : undefined
  if (clash !== undefined) {
    process.stderr.write(`error: ${clash}\n`)
    return 2
  }
  const redis = args.redis ? redisFromEnv() : undefined
  if (args.redis && !redis) {
    process.stderr.write('error: --redis needs UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN in the environment\n')
    return 2
  }
  const key = generateApiKey(args.env)
  const entry: KeyEntry = keyEntrySchema.parse({ name: args.name, ...(args.tenant === undefined ? {} : { tenant: args.tenant }), hash: await hashApiKey(key), scopes: args.scopes, ...limitFields(args.limit.binding ?? args.limit.perMinute) })
  if (redis) await redis.hset(API_KEYS_HASH, { [entry.hash]: JSON.stringify(entry) })
  if (args.local) {
    try {
      addLocalKey(key, entry)
    } catch (err) {
      process.stderr.write(`error: ${(err as Error).message}\n`)
      return 2
    }
  }
  if (args.json) {
    process.stdout.write(`${JSON.stringify({ key, entry })}\n`)
    return 0
  }
  process.stdout.write(
    [
      args.local ? `API key for "${entry.name}" (kept in ${LOCAL_KEYS_FILE}; npm start's edge accepts it from its next start):` : `API key for "${entry.name}" (shown only now and stored nowhere; hand it to the client and keep it secret):`,
      key,
      '',
      args.local ? 'Entry, in the local keys file:' : redis ? `Entry, stored in Redis (hash "${API_KEYS_HASH}"; revoke with HDEL ${API_KEYS_HASH} ${entry.hash}):` : 'Entry for the API_KEYS secret (add it to the JSON array, e.g. `wrangler secret put API_KEYS`):',
      JSON.stringify(entry),
      '',
    ].join('\n'),
  )
  return 0
}

/**
 * Run as a file (`npm run keys:create`, and `node dist/infra/keys/create-key.js` where no
 * development tool is installed): flags read with node:util; `edge-infer keys create` reads the same
 * flags with commander and calls createKeyArgs and createKey.
 */
const main = async (): Promise<number> => {
  let args
  try {
    args = parse(process.argv.slice(2))
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    process.stderr.write(`error: ${err.message}\n\n${CREATE_KEY_USAGE}\n`)
    return 2
  }
  if (args === 'help') {
    process.stdout.write(`${CREATE_KEY_USAGE}\n`)
    return 0
  }
  return createKey(args)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = await main()
