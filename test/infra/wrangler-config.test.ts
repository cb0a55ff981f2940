import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { unstable_readConfig } from 'wrangler'
import { CONSOLE_FILES } from '../../edge/console/assets.generated.ts'
import type { Bindings } from '../../edge/bindings.ts'
import { BUNDLE_LIMIT_BYTES, bundleSize } from '../../load/bench/edge/startup.ts'

const run = promisify(execFile)
const ENVIRONMENTS = [['default', ''], ['staging', 'staging'], ['production', 'production']] as const

/**
 * Where each of the worker's bindings comes from. The compiler holds this table to `Bindings`
 * (no name missing, none extra); the tests below hold its `var` and `required secret` rows to
 * every wrangler.toml environment, so the type and the config cannot drift apart.
 */
const BINDING_SOURCES = {
  BACKEND_URL: 'var',
  ALLOWED_ORIGINS: 'var',
  MAX_BODY_BYTES: 'var',
  MAX_INSTANCES: 'var',
  FEATURE_TIMEOUT_MS: 'var',
  API_KEYS: 'required secret',
  // Deployed, the edge's counters must be shared across isolates (one per PoP and more): Upstash holds them.
  UPSTASH_REDIS_REST_URL: 'required secret when deployed',
  UPSTASH_REDIS_REST_TOKEN: 'required secret when deployed',
  LAMBDA_FUNCTION: 'optional secret',
  LAMBDA_REGION: 'optional secret',
  AWS_ACCESS_KEY_ID: 'optional secret',
  AWS_SECRET_ACCESS_KEY: 'optional secret',
  ALERT_WEBHOOK_URL: 'optional secret',
  // Local runs (the default environment) may leave the backend open; deployed ones may not.
  INFER_TOKEN: 'required secret when deployed',
  LAMBDA_ENDPOINT: 'local only',
  CONTROLLER_STEPS: 'override of a default in code',
  REDIS_TIMEOUT_MS: 'override of a default in code',
  METRICS_FLUSH_MS: 'override of a default in code',
  METRICS_SCRAPE_TIMEOUT_MS: 'override of a default in code',
  REQUEST_LOG_SAMPLE_RATE: 'override of a default in code',
  CONTROLLER_DWELL_MINUTES: 'override of a default in code',
  CONTROLLER_MIN_ROWS: 'override of a default in code',
  CONTROLLER_MIN_REQUESTS: 'override of a default in code',
  CONTROLLER_ERROR_RATE_MARGIN: 'override of a default in code',
  CONTROLLER_PSI_WARNING: 'override of a default in code',
  CONTROLLER_PSI_CRITICAL: 'override of a default in code',
  CONTROLLER_CRITICAL_WINDOWS: 'override of a default in code',
  CONTROLLER_CLEAN_WINDOWS: 'override of a default in code',
  CONTROLLER_P95_RATIO: 'override of a default in code',
  CONTROLLER_P95_SLACK_MS: 'override of a default in code',
  CONTROLLER_MAX_WINDOW_MINUTES: 'override of a default in code',
  CONTROLLER_MIN_LABELS: 'override of a default in code',
  CONTROLLER_LABEL_MAX_DELAY_MINUTES: 'override of a default in code',
  CONTROLLER_QUALITY_METRIC: 'override of a default in code',
  CONTROLLER_QUALITY_MARGIN: 'override of a default in code',
  // Served predictions are kept for feedback only for the models named.
  FEEDBACK_MODELS: 'optional var',
  FEEDBACK_TTL_SECONDS: 'override of a default in code',
  PREDICTION_CACHE_MAX_ENTRIES: 'override of a default in code',
  PREDICTION_CACHE_MAX_ENTRY_BYTES: 'override of a default in code',
  // Tracing is off until a collector is named (a var per environment, or `--var` at deploy).
  OTEL_EXPORTER_OTLP_ENDPOINT: 'optional var',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'optional var',
  OTEL_EXPORTER_OTLP_HEADERS: 'optional secret',
  OTEL_EXPORTER_OTLP_TIMEOUT: 'override of a default in code',
  OTEL_SERVICE_NAME: 'override of a default in code',
  OTEL_TRACES_SAMPLER: 'override of a default in code',
  OTEL_TRACES_SAMPLER_ARG: 'override of a default in code',
} as const satisfies Record<keyof Bindings, string>

const namesOf = (source: string) => Object.entries(BINDING_SOURCES).filter(([, s]) => s === source).map(([name]) => name).sort()

/** What `wrangler deploy --dry-run` says about an environment: it validates the config and bundles. */
const dryRun = async (env: string) => {
  const outdir = await mkdtemp(join(tmpdir(), 'wrangler-env-'))
  try {
    const { stdout, stderr } = await run(process.execPath, ['node_modules/wrangler/bin/wrangler.js', 'deploy', '--dry-run', '--outdir', outdir, '--env', env], {
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' },
    })
    const bundle = await readFile(join(outdir, 'worker.js'), 'utf8')
    return { output: stdout + stderr, bundle, size: await bundleSize(join(outdir, 'worker.js')) }
  } finally {
    await rm(outdir, { recursive: true, force: true })
  }
}

const packageJson = async (name: string) => JSON.parse(await readFile(join('node_modules', name, 'package.json'), 'utf8')) as { version: string; dependencies?: Record<string, string> }

describe('wrangler.toml', () => {
  it.each([['default', '', 'http://127.0.0.1:8000'], ['staging', 'staging', 'https://backend.staging.edge-infer.dev'], ['production', 'production', 'https://backend.edge-infer.dev']])(
    'the %s environment validates and bundles with no warning, and names its backend',
    async (_name, env, backend) => {
      const { output, bundle, size } = await dryRun(env)
      expect(output).toContain(`env.BACKEND_URL ("${backend}`)
      expect(output).toMatch(/env\.MAX_INSTANCES \("64"\)/)
      expect(output).not.toMatch(/WARNING|▲/)
      expect(bundle).toMatch(/scheduled/)
      // keep_names = false: no __name() wrapper around every function the worker creates per request.
      expect(bundle).not.toMatch(/__name\(/)
      // Issue 34: every module the deploy uploads, together, stays under 1 MB.
      expect(size.totalBytes).toBeLessThanOrEqual(BUNDLE_LIMIT_BYTES)
      // The operator console travels in the bundle (no [assets] directory to deploy beside it).
      expect(bundle).toContain(Object.keys(CONSOLE_FILES).find((name) => name.endsWith('.js')))
    },
  )

  it.each(ENVIRONMENTS)('the %s environment declares exactly the vars and required secrets that Bindings names', (_name, env) => {
    const config = unstable_readConfig({ config: 'wrangler.toml', env: env || undefined })
    expect(Object.keys(config.vars).sort()).toEqual(namesOf('var'))
    const required = [...namesOf('required secret'), ...(env ? namesOf('required secret when deployed') : [])].sort()
    expect([...(config.secrets?.required ?? [])].sort()).toEqual(required)
  })

  it('runs on the newest compatibility date of the one workerd that wrangler and miniflare share', async () => {
    const workerd = (await packageJson('workerd')).version
    expect((await packageJson('wrangler')).dependencies?.workerd).toBe(workerd)
    expect((await packageJson('miniflare')).dependencies?.workerd).toBe(workerd)
    const release = /^1\.(\d{4})(\d{2})(\d{2})\./.exec(workerd)!
    expect(unstable_readConfig({ config: 'wrangler.toml' }).compatibility_date).toBe(`${release[1]}-${release[2]}-${release[3]}`)
  })
})
