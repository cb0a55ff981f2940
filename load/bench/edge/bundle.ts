import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, extname, join } from 'node:path'
import { onCleanup, runToEnd } from '../../harness/processes.ts'
import { ROOT } from '../../harness/servers.ts'

/**
 * Bundles a worker as a deploy would (`wrangler deploy --dry-run`, workerd conditions, the
 * settings of wrangler.toml): the edge's own entry, or another entry script such as the
 * benchmark's pipeline worker. `root`: the source tree to bundle from (another commit's, for an
 * A/B), with this checkout's wrangler; `minify: false` keeps a line per statement, for a profile's
 * line ticks. Answers the bundle's path.
 */
export const bundleWorker = async (entry = 'edge/worker.ts', root = ROOT, { minify = true }: { minify?: boolean } = {}): Promise<string> => {
  const outdir = await mkdtemp(join(tmpdir(), 'bench-edge-bundle-'))
  onCleanup(() => rm(outdir, { recursive: true, force: true }))
  await runToEnd('wrangler deploy --dry-run', process.execPath, [join(ROOT, 'node_modules/wrangler/bin/wrangler.js'), 'deploy', entry, '--dry-run', '--outdir', outdir, ...(minify ? [] : ['--no-minify'])], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' },
  })
  return join(outdir, `${basename(entry, extname(entry))}.js`)
}

