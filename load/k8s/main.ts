import { readFile } from 'node:fs/promises'
import { runAutocannon } from '../harness/autocannon.ts'
import { primeInfer, startServer, waitReady } from '../harness/servers.ts'
import { creditRiskWorkload } from '../harness/workloads.ts'
import { BACKEND_METRICS } from '../../shared/backend-metrics.ts'
import { parsePrometheusText } from '../../shared/prometheus-text.ts'

/**
 * `tsx load/k8s/main.ts`: the figures the Kubernetes manifests are sized from (see
 * infra/k8s/sizing.ts). Starts the real backend with the bundled models, reads its resident memory
 * once warm and at its peak under load, and at rising concurrency the rows/s, p99 and the mean
 * queue-depth gauge the autoscaler reads, so the knee (where more rows in flight stop buying
 * throughput) can be read off.
 * Env: MEASURE_DURATION_S (default 8), MEASURE_CONNECTIONS (default 4,8,16,32,64).
 */

const statusKb = async (pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`)
  return Number(match[1])
}

const queueDepth = async (url: string): Promise<number> => {
  const samples = parsePrometheusText(await (await fetch(`${url}/metrics`)).text())
  return samples.filter((s) => s.name === BACKEND_METRICS.queueDepth).reduce((n, s) => n + s.value, 0)
}

const durationS = Number(process.env.MEASURE_DURATION_S ?? 8)
const connections = (process.env.MEASURE_CONNECTIONS ?? '4,8,16,32,64').split(',').map(Number)
const workload = await creditRiskWorkload()
const server = await startServer('backend/server.ts', { MODEL_REPOSITORY: workload.repository })
try {
  const pid = server.child.process.pid
  if (pid === undefined) throw new Error('backend has no pid')
  const inferUrl = `${server.url}/v2/models/${workload.model}/infer`
  await waitReady(server.url)
  await primeInfer(inferUrl, workload.body)
  const warmKb = await statusKb(pid, 'VmRSS')
  console.log(`warm RSS ${(warmKb / 1024).toFixed(0)} MiB`)
  for (const c of connections) {
    const depths: number[] = []
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        depths.push(await queueDepth(server.url))
        await new Promise((r) => setTimeout(r, 100))
      }
    })()
    const load = await runAutocannon({ url: inferUrl, body: workload.body, connections: c, durationS })
    sampling = false
    await sampler
    const mean = depths.reduce((a, b) => a + b, 0) / Math.max(1, depths.length)
    console.log(`c=${c} rows/s ${load.reqPerSec.toFixed(0)} p50 ${load.p50Ms} ms p99 ${load.p99Ms} ms mean depth ${mean.toFixed(1)} non2xx ${load.non2xx} rss ${((await statusKb(pid, 'VmRSS')) / 1024).toFixed(0)} MiB`)
  }
  console.log(`peak RSS (VmHWM) ${((await statusKb(pid, 'VmHWM')) / 1024).toFixed(0)} MiB`)
} finally {
  await server.stop()
}
