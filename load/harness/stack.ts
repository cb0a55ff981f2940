import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateApiKey, hashApiKey, type KeyEntry } from '../../edge/stores/keys/api-key.ts'
import { confirmBackend, confirmEdge } from '../../dev/stack-checks.ts'
import { findWorkerdPid } from './workerd-pid.ts'
import { onCleanup, runToEnd, within } from './processes.ts'
import { ROOT, startServer, type ServerProcess } from './servers.ts'

/**
 * The local stack `npm start` runs — the backend with the bundled models and an INFER_TOKEN it
 * shares with the edge, the edge worker in real workerd with a fresh key — started for one load
 * run on free loopback ports and stopped after it. The worker is bundled as a deploy bundles it
 * and run by Miniflare without wrangler dev's proxy in front (load/harness/workerd-host.ts), so
 * what is measured is workerd, not a dev tool.
 */
export interface LocalStack {
  edgeUrl: string
  backendUrl: string
  /** A predict key only this stack's edge accepts. */
  apiKey: string
  /** With `admin: true`: a key with the admin scope (rollout changes), for this stack only. */
  adminKey?: string
  /** The bearer token the backend requires on /v2 inference (what the edge sends it). */
  inferToken: string
  backendPid: number | undefined
  /** The workerd process running the edge, for its CPU time. */
  workerdPid: number | undefined
  stop(): Promise<void>
}

/** Bounds on each start: a stack that does not come up fails the run rather than hanging it. */
const LISTEN_TIMEOUT_MS = 90_000
const POLL = { tries: 300, everyMs: 200 }

/** `wrangler deploy --dry-run`: the worker bundled exactly as a deploy would; answers worker.js's path. */
const bundleEdge = async (): Promise<string> => {
  const outdir = await mkdtemp(join(tmpdir(), 'load-edge-bundle-'))
  onCleanup(() => rm(outdir, { recursive: true, force: true }))
  await runToEnd('wrangler deploy --dry-run', process.execPath, [join(ROOT, 'node_modules/wrangler/bin/wrangler.js'), 'deploy', '--dry-run', '--outdir', outdir], {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' },
  })
  return join(outdir, 'worker.js')
}

const loadKey = async (): Promise<{ key: string; entry: KeyEntry }> => {
  const key = generateApiKey('load')
  // A limit no bounded load run reaches: the run measures the stack, not the rate limiter.
  return { key, entry: { name: 'load', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1_000_000 } }
}

export interface LocalStackOptions {
  /** Also issue a key with the admin scope, as `adminKey` (a run that changes the rollout). */
  admin?: boolean
}

export const startLocalStack = async (progress: (line: string) => void = () => {}, { admin = false }: LocalStackOptions = {}): Promise<LocalStack> => {
  const inferToken = randomBytes(24).toString('base64url')
  const instanceId = randomUUID()
  let backend: ServerProcess | undefined
  let edge: ServerProcess | undefined
  const stop = async () => {
    await edge?.stop()
    await backend?.stop()
  }
  try {
    progress('local stack: bundling the edge worker and starting the backend')
    const [bundle, startedBackend] = await Promise.all([
      bundleEdge(),
      within(LISTEN_TIMEOUT_MS, 'the backend to listen', startServer('backend/server.ts', { INFER_TOKEN: inferToken, INSTANCE_ID: instanceId })),
    ])
    backend = startedBackend
    await confirmBackend(backend.url, instanceId, POLL)
    const { key, entry } = await loadKey()
    const operator = admin ? generateApiKey('load') : undefined
    const keys: KeyEntry[] = [entry, ...(operator ? [{ name: 'load-admin', hash: await hashApiKey(operator), scopes: ['admin' as const], rate_limit_per_minute: 1_000_000 }] : [])]
    progress('local stack: starting the edge in workerd')
    edge = await within(LISTEN_TIMEOUT_MS, 'workerd to listen', startServer('load/harness/workerd-host.ts', {
      EDGE_BUNDLE: bundle,
      EDGE_BINDINGS: JSON.stringify({ BACKEND_URL: backend.url, INFER_TOKEN: inferToken, API_KEYS: JSON.stringify(keys), ALLOWED_ORIGINS: '' }),
    }))
    await confirmEdge(edge.url, key, POLL)
    const hostPid = edge.child.process.pid
    return {
      edgeUrl: edge.url,
      backendUrl: backend.url,
      apiKey: key,
      ...(operator ? { adminKey: operator } : {}),
      inferToken,
      backendPid: backend.child.process.pid,
      workerdPid: hostPid === undefined ? undefined : findWorkerdPid(hostPid),
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}
