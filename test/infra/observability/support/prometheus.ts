import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { until } from '../../../backend/support/backend-process.ts'
import { freePort } from '../../../support/ports.ts'

export interface ScrapeTarget {
  job: string
  /** host:port */
  target: string
  /** Labels added to every series of the target (as a ServiceMonitor's relabelling would). */
  labels?: Record<string, string>
  bearer?: string
}

export interface PrometheusServer {
  url: string
  /** An instant query; resolves with the API's status and result vector (or matrix/scalar) as JSON. */
  query(expr: string): Promise<QueryResult>
  stop(): Promise<void>
  /** Everything the server wrote to stderr (its log). */
  log(): string
}

export interface QueryResult {
  status: string
  error?: string
  result: Array<{ metric: Record<string, string>; value: [number, string] }>
}

/**
 * The real Prometheus server (Debian package `prometheus`) on a free loopback port, its TSDB in a
 * temporary directory, scraping and evaluating the given rule files every second.
 */
export const startPrometheus = async ({ targets, ruleFiles }: { targets: ScrapeTarget[]; ruleFiles: string[] }): Promise<PrometheusServer> => {
  const dir = await mkdtemp(join(tmpdir(), 'prometheus-'))
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    rule_files: ruleFiles,
    scrape_configs: targets.map((t) => ({
      job_name: t.job,
      ...(t.bearer && { authorization: { type: 'Bearer', credentials: t.bearer } }),
      static_configs: [{ targets: [t.target], ...(t.labels && { labels: t.labels }) }],
    })),
  }
  await writeFile(join(dir, 'prometheus.yml'), stringify(config))
  const port = await freePort()
  const child = spawn('prometheus', [
    `--config.file=${join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = `http://127.0.0.1:${port}`
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
    await rm(dir, { recursive: true, force: true })
  }
  try {
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}: ${stderr}`)
      return (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok === true
    }, { tries: 200, everyMs: 100 })
  } catch (err) {
    await stop()
    throw err
  }
  return {
    url,
    async query(expr) {
      const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`, { signal: AbortSignal.timeout(10_000) })
      const body = (await res.json()) as { status: string; error?: string; data?: { result: QueryResult['result'] } }
      return { status: body.status, ...(body.error && { error: body.error }), result: body.data?.result ?? [] }
    },
    stop,
    log: () => stderr,
  }
}
