import { readdir, writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { runAutocannon } from '../../harness/autocannon.ts'
import { processCpuMicros } from '../../harness/cpu.ts'
import { measureCeiling } from '../../harness/in-process.ts'
import { meanBatchSize, scrapeBatchCounters } from '../../harness/metrics.ts'
import { cleanUp, installSignalHandlers } from '../../harness/processes.ts'
import { ROOT, startServer, waitReady } from '../../harness/servers.ts'
import { creditRiskWorkload } from '../../harness/workloads.ts'
import { fitLine, SERVICE_TIME_FILE, type ServiceTimeMeasurement } from '../service-time.ts'

/**
 * `npx tsx load/sim/measure-service/main.ts`: the simulator's service-time model, measured with the
 * bundled credit-risk model. Two parts:
 *  - t(b) = a + c·b: onnxruntime-node sessions with the server's session options, batches of b rows
 *    back to back (a loaded replica's engine never idles between batches; one request at a time
 *    through the server measures thread wake-ups instead), least squares over b;
 *  - the per-request front cost (HTTP, JSON, validation, drift counting): the real server's CPU
 *    per request under concurrent batched load, less the engine's share at the mean batch it formed.
 * Writes load/sim/service-time.json.
 */

const BATCH_SIZES = [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
const SECONDS_PER_BATCH_SIZE = 1
const LOAD = { connections: 32, durationS: 8, warmupS: 2 }

const main = async (): Promise<void> => {
  installSignalHandlers()
  try {
    const workload = await creditRiskWorkload(1)
    const modelPath = workload.modelPath(await servedVersion())
    const points: ServiceTimeMeasurement['points'] = []
    for (const rows of BATCH_SIZES) {
      const { runsPerSec } = await measureCeiling({ modelPath, inputName: workload.inputName, row: workload.row, batchSize: rows, durationS: SECONDS_PER_BATCH_SIZE })
      points.push({ rows, computeUs: round1(1e6 / runsPerSec) })
      process.stderr.write(`t(${rows}) = ${round1(1e6 / runsPerSec)} µs\n`)
    }
    const fit = fitLine(points.map((p) => p.rows), points.map((p) => p.computeUs))

    const server = await startServer('backend/server.ts', { MODEL_REPOSITORY: join(ROOT, 'models') })
    await waitReady(server.url)
    const url = `${server.url}/v2/models/credit-risk/infer`
    const { body } = workload
    const pid = server.child.process.pid!
    await runAutocannon({ url, body, connections: LOAD.connections, durationS: LOAD.warmupS })
    const before = await scrapeBatchCounters(server.url, 'credit-risk')
    const cpuBefore = processCpuMicros(pid)
    const load = await runAutocannon({ url, body, connections: LOAD.connections, durationS: LOAD.durationS })
    const cpuAfter = processCpuMicros(pid)
    if (load.ok !== load.completed || load.errors > 0) throw new Error(`the loaded run had ${load.non2xx} non-2xx answers and ${load.errors} errors`)
    await new Promise((r) => setTimeout(r, 200))
    const meanBatch = meanBatchSize(before, await scrapeBatchCounters(server.url, 'credit-risk'))
    const cpuUsPerRequest = (cpuAfter - cpuBefore) / load.completed
    const engineUsPerRow = (fit.interceptUs + fit.slopeUsPerRow * meanBatch) / meanBatch
    await server.stop()

    const measurement: ServiceTimeMeasurement = {
      command: 'npx tsx load/sim/measure-service/main.ts',
      measuredAt: new Date().toISOString().slice(0, 10),
      node: process.version,
      model: 'credit-risk',
      loadAverage1m: Number(loadavg()[0].toFixed(2)),
      points,
      fit: { aUs: round1(fit.interceptUs), cUsPerRow: round1(fit.slopeUsPerRow) },
      front: {
        connections: LOAD.connections,
        durationS: LOAD.durationS,
        rowsPerSecond: Math.round(load.reqPerSec),
        cpuUsPerRequest: round1(cpuUsPerRequest),
        meanBatch: round1(meanBatch),
        perRequestUs: round1(cpuUsPerRequest - engineUsPerRow),
      },
    }
    await writeFile(SERVICE_TIME_FILE, `${JSON.stringify(measurement, null, 2)}\n`)
    process.stdout.write(`${JSON.stringify(measurement, null, 2)}\n`)
  } finally {
    await cleanUp()
  }
}

/** The version unversioned requests reach: the highest the repository holds (version_policy latest). */
const servedVersion = async (): Promise<string> => {
  const entries = await readdir(join(ROOT, 'models', 'credit-risk'), { withFileTypes: true })
  return String(Math.max(...entries.filter((e) => e.isDirectory() && /^\d+$/.test(e.name)).map((e) => Number(e.name))))
}

const round1 = (x: number): number => Math.round(x * 10) / 10

main().catch((err: unknown) => {
  process.stderr.write(`measure-service failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
