import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)

/** What `wrangler deploy --dry-run` says about an environment: it validates the config and bundles. */
const dryRun = async (env?: string) => {
  const outdir = await mkdtemp(join(tmpdir(), 'wrangler-env-'))
  try {
    const { stdout } = await run(process.execPath, ['node_modules/wrangler/bin/wrangler.js', 'deploy', '--dry-run', '--outdir', outdir, ...(env ? ['--env', env] : [])], {
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' },
    })
    const bundle = await readFile(join(outdir, 'worker.js'), 'utf8')
    return { stdout, bundle }
  } finally {
    await rm(outdir, { recursive: true, force: true })
  }
}

describe('wrangler.toml', () => {
  it.each([['default', undefined, 'http://127.0.0.1:8000'], ['staging', 'staging', 'https://backend.staging'], ['production', 'production', 'https://backend.edge-infer']])(
    'the %s environment validates, bundles and names its backend',
    async (_name, env, backend) => {
      const { stdout, bundle } = await dryRun(env)
      expect(stdout).toContain(`env.BACKEND_URL ("${backend}`)
      expect(stdout).toMatch(/env\.MAX_INSTANCES \("64"\)/)
      expect(bundle).toMatch(/scheduled/)
      // keep_names = false: no __name() wrapper around every function the worker creates per request.
      expect(bundle).not.toMatch(/__name\(/)
    },
  )
})
