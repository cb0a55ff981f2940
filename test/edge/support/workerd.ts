import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Miniflare } from 'miniflare'
import { type RateLimitConfig, bundledWorkerOptions } from '../../../dev/workerd.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const run = promisify(execFile)

export interface RunningWorker {
  mf: Miniflare
  url: string
  /** What the worker wrote to its console, line by line. */
  logs: string[]
  dispose(): Promise<void>
}

/**
 * Bundles the worker exactly as a deploy would (`wrangler deploy --dry-run`, workerd conditions)
 * and runs the bundle in real workerd through Miniflare, with the given vars and secrets, and
 * `ratelimits` in place of wrangler.toml's `[[ratelimits]]` bindings when given.
 */
export const startWorker = async (bindings: Record<string, string>, { ratelimits }: { ratelimits?: Record<string, RateLimitConfig> } = {}): Promise<RunningWorker> => {
  const outdir = await mkdtemp(join(tmpdir(), 'edge-bundle-'))
  await run(process.execPath, [join(ROOT, 'node_modules/wrangler/bin/wrangler.js'), 'deploy', '--dry-run', '--outdir', outdir], {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' },
  })
  const logs: string[] = []
  const mf = new Miniflare(await bundledWorkerOptions({
    bundle: join(outdir, 'worker.js'),
    bindings,
    ...(ratelimits && { ratelimits }),
    onLog: (_level, message) => logs.push(...message.split('\n').filter(Boolean)),
  }))
  const url = (await mf.ready).toString().replace(/\/$/, '')
  return {
    mf,
    url,
    logs,
    async dispose() {
      await mf.dispose()
      await rm(outdir, { recursive: true, force: true })
    },
  }
}
