import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Redis } from '@upstash/redis'
import { generateApiKey } from '../edge/stores/keys/api-key.ts'
import { featureKey } from '../edge/stores/features/feature-store.ts'
import seed from '../edge/stores/features/demo-seed.json' with { type: 'json' }
import { whenLaunchersExit } from './lifecycle.ts'
import { LOCAL_KEYS_FILE, localDevKey } from './local-keys.ts'
import { portFromEnv } from './server-process.ts'
import { assertPortFree, confirmBackend, confirmEdge } from './stack-checks.ts'
import { startUpstashAdapter, type UpstashAdapter } from './upstash-adapter/server.ts'

/**
 * `npm start`: the whole stack on embedded defaults — the inference backend with the bundled
 * models, the edge worker in `wrangler dev` (local workerd, no Cloudflare account) pointed at
 * it, a local API key (kept in .dev.keys.json across restarts; `--fresh-key` makes a new one) —
 * then a request that works as pasted. Ctrl-C stops everything.
 * With `REDIS_URL` set, the edge uses that Redis (features, rate limits, rollout state) through
 * the local Upstash REST adapter, seeded with the demo users.
 *
 * The rollout controller runs as in production, on the worker's Cron Trigger, fired here every
 * `CONTROLLER_TICK_S` seconds (60); `CONTROLLER_*` and `MODEL_REPOSITORY` from the environment
 * reach the worker and the backend (`demo:canary` uses them for a fast, scripted canary).
 * Served predictions are kept for feedback (`FEEDBACK_MODELS`, every model by default).
 *
 * It never reports a stack it did not start: both ports must be free before anything starts,
 * the backend must answer with the instance id given to it and the edge must accept the fresh
 * key. It exits 0 only when asked to stop (Ctrl-C, SIGTERM, SIGHUP when the terminal closes, or
 * its launcher — npm, sh, tsx — exiting, kill -9 included); a failed start or a child that exits
 * on its own stops the rest and exits 1. Each child runs on a leash (dev/leash.mjs) that stops it,
 * with everything it started, when this process is gone, however it died.
 */
const ROOT = fileURLToPath(new URL('../', import.meta.url))
const BACKEND_PORT = portFromEnv('BACKEND_PORT', { fallback: 8000, anyFree: false })
const EDGE_PORT = portFromEnv('EDGE_PORT', { fallback: 8787, anyFree: false })
const BACKEND_URL = `http://127.0.0.1:${BACKEND_PORT}`
const EDGE_URL = `http://127.0.0.1:${EDGE_PORT}`
const TICK_S = Number(process.env.CONTROLLER_TICK_S ?? 60)
/** `wrangler dev --test-scheduled` runs the scheduled handler on a GET of this path. */
const SCHEDULED_PATH = '/__scheduled?cron=*+*+*+*+*'

const LEASH = fileURLToPath(new URL('./leash.mjs', import.meta.url))
const children: ChildProcess[] = []
let adapter: UpstashAdapter | undefined

/** A child of the stack: its leash, and the pid of the command the leash runs. */
interface Child {
  leash: ChildProcess
  pid: Promise<number>
}

const start = (name: string, command: string, args: string[], env: Record<string, string>): Child => {
  // The leash's stdin is this process's end of a pipe: it closes when this process is gone.
  const child = spawn(process.execPath, [LEASH, command, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe', 'pipe'] })
  children.push(child)
  const prefix = (line: string) => process.stdout.write(`[${name}] ${line}\n`)
  createInterface({ input: child.stdout! }).on('line', prefix)
  createInterface({ input: child.stderr! }).on('line', prefix)
  child.on('exit', (code, signal) => {
    if (!stopping) {
      process.stderr.write(`[${name}] exited (${code ?? signal}); stopping the stack\n`)
      stop(1)
    }
  })
  const pid = new Promise<number>((resolve) => {
    let text = ''
    child.stdio[3]!.on('data', (chunk: Buffer) => (text += chunk.toString()))
    child.stdio[3]!.on('end', () => resolve(Number(text.trim()) || child.pid!))
  })
  return { leash: child, pid }
}

let stopping = false
/** Stops every child (its leash stops the child's whole group) and exits with `exitCode` once they are gone. */
const stop = (exitCode: number) => {
  if (stopping) return
  stopping = true
  void adapter?.close()
  for (const child of children) {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(child.pid, 'SIGTERM')
      } catch {
        // already gone
      }
    }
  }
  // Leave once every child is gone (or after a grace period), so nothing outlives `npm start`.
  const gone = children.map((child) => (child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', r))))
  void Promise.all(gone).then(() => process.exit(exitCode))
  setTimeout(() => process.exit(exitCode), 10_000).unref()
}
process.on('SIGINT', () => stop(0))
process.on('SIGTERM', () => stop(0))
process.on('SIGHUP', () => stop(0))
whenLaunchersExit(() => stop(0))

/** The Upstash adapter in front of the given Redis, with the demo users' features written to it. */
const startRedisAdapter = async (redisUrl: string): Promise<UpstashAdapter> => {
  adapter = await startUpstashAdapter({ redisUrl, token: generateApiKey('adapter') })
  const client = new Redis({ url: adapter.url, token: adapter.token, retry: false, enableTelemetry: false })
  for (const [entity, ids] of Object.entries(seed)) {
    for (const [id, values] of Object.entries(ids)) await client.hset(featureKey(entity, id), values)
  }
  process.stdout.write(`[redis] ${redisUrl} through the Upstash adapter at ${adapter.url} (token ${adapter.token}): \`UPSTASH_REDIS_REST_URL=${adapter.url} UPSTASH_REDIS_REST_TOKEN=${adapter.token} npm run keys:create -- --redis …\` issues keys into it\n`)
  return adapter
}

const exampleInstance = () => ({
  age: 34, income: 52_000, debt_ratio: 0.35, credit_utilization: 0.4, credit_lines: 4, months_employed: 30,
  loan_amount: 12_000, loan_term_months: 36, num_late_payments: 1, region: 'north', housing: 'rent', has_default_history: false,
})

const main = async () => {
  await assertPortFree(BACKEND_PORT, 'BACKEND_PORT')
  await assertPortFree(EDGE_PORT, 'EDGE_PORT')
  const { key, entries } = await localDevKey({ fresh: process.argv.includes('--fresh-key') })
  // The local stack authenticates the edge to its backend as production does.
  const inferToken = randomBytes(24).toString('base64url')
  const redis = process.env.REDIS_URL ? await startRedisAdapter(process.env.REDIS_URL) : undefined
  // wrangler dev reads secrets for local runs from .dev.vars (git-ignored); only the hash is written.
  // With [secrets] declared in wrangler.toml it takes just those from the file, so the rest
  // (vars, the optional local Redis, controller overrides) go on the command line.
  writeFileSync(`${ROOT}.dev.vars`, `API_KEYS='${JSON.stringify(entries)}'\n`)
  const vars: Record<string, string> = {
    BACKEND_URL,
    INFER_TOKEN: inferToken,
    ALLOWED_ORIGINS: 'http://127.0.0.1:5173,http://localhost:5173',
    ...(redis && { UPSTASH_REDIS_REST_URL: redis.url, UPSTASH_REDIS_REST_TOKEN: redis.token }),
    // Every model's served predictions wait for feedback locally, unless told otherwise.
    FEEDBACK_MODELS: process.env.FEEDBACK_MODELS ?? '*',
    ...(process.env.FEEDBACK_TTL_SECONDS ? { FEEDBACK_TTL_SECONDS: process.env.FEEDBACK_TTL_SECONDS } : {}),
    ...Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('CONTROLLER_') && e[0] !== 'CONTROLLER_TICK_S' && e[1] !== undefined)),
  }

  const instanceId = randomUUID()
  const backend = start('backend', process.execPath, ['--import', 'tsx', 'backend/server.ts'], { PORT: String(BACKEND_PORT), INSTANCE_ID: instanceId, INFER_TOKEN: inferToken, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', ORT_DISABLE_TELEMETRY: '1' })
  process.stdout.write(`[backend] pid ${await backend.pid}\n`)
  await confirmBackend(BACKEND_URL, instanceId, { cancelled: () => stopping })
  const edge = start('edge', process.execPath, [
    'node_modules/wrangler/bin/wrangler.js', 'dev', '--ip', '127.0.0.1', '--port', String(EDGE_PORT), '--show-interactive-dev-session=false', '--log-level', 'warn', '--test-scheduled',
    ...Object.entries(vars).flatMap(([name, value]) => ['--var', `${name}:${value}`]),
  ], {
    WRANGLER_SEND_METRICS: 'false',
    // Offline, the lookup of a real Request.cf object fails with a getaddrinfo stack trace; the placeholder serves locally.
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  })
  process.stdout.write(`[edge] pid ${await edge.pid}\n`)
  await confirmEdge(EDGE_URL, key, { cancelled: () => stopping })
  if (TICK_S > 0) {
    const ticker = setInterval(() => void fetch(`${EDGE_URL}${SCHEDULED_PATH}`).then((r) => r.arrayBuffer(), () => undefined), TICK_S * 1000)
    ticker.unref()
  }

  const body = JSON.stringify({ instances: [exampleInstance()], entity: { user_id: 'u-1' } })
  process.stdout.write([
    '',
    `edge-infer is up: edge ${EDGE_URL} → backend ${BACKEND_URL}  (Ctrl-C stops both)`,
    `local API key (predict, admin, feedback; kept in ${LOCAL_KEYS_FILE}, \`npm start -- --fresh-key\` replaces it): ${key}`,
    `rollout controller: a tick every ${TICK_S > 0 ? `${TICK_S} s` : '(off)'}; tick now: curl -s '${EDGE_URL}${SCHEDULED_PATH}'`,
    process.env.ADMIN_TOKEN
      ? `model repository API: on (ADMIN_TOKEN from the environment); after a config change: npx edge-infer models reload <model> --backend ${BACKEND_URL}`
      : 'model repository API: off; start with ADMIN_TOKEN=<16+ characters> to reload a model after a config change (docs/bring-your-own-model.md)',
    'Try:',
    `  curl -s ${EDGE_URL}/v1/models/credit-risk/predict -H 'content-type: application/json' -H 'x-api-key: ${key}' -H 'x-request-id: try-it-0001' -d '${body}'`,
    `  curl -s ${EDGE_URL}/v1/feedback -H 'content-type: application/json' -H 'x-api-key: ${key}' -d '{"request_id": "try-it-0001", "label": "low_risk"}'`,
    `  curl -s ${EDGE_URL}/v1/models/credit-risk/quality -H 'x-api-key: ${key}'`,
    `Operator console: ${EDGE_URL}/console  (paste the key above; the page keeps it in memory only)`,
    '',
  ].join('\n'))
}

main().catch((err: unknown) => {
  process.stderr.write(`npm start failed: ${err instanceof Error ? err.message : String(err)}\n`)
  stop(1)
})
