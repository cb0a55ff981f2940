import { mkdir, writeFile } from 'node:fs/promises'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { DEFAULT_FEATURE_SEED } from '../../edge/stores/features/memory.ts'
import { encodeInstance, featureSpec, specWidth, type FeatureSpec, type FeatureValue } from '../../shared/feature-spec.ts'
import type { InferRequest } from '../../shared/protocol.ts'
import { loadAverage, processCpuMicros } from '../harness/cpu.ts'
import { meanBatchSize, scrapeBatchCounters } from '../harness/metrics.ts'
import { cleanUp, installSignalHandlers } from '../harness/processes.ts'
import { runIfMain } from '../../tools/cli/direct.ts'
import { UsageError, parseTarget, positiveNumber } from '../harness/args.ts'
import { fetchCatalog } from '../harness/catalog.ts'
import { answered, errorRate, latencySummary } from '../harness/outcomes.ts'
import { startLocalStack, type LocalStack } from '../harness/stack.ts'
import { ROOT } from '../harness/servers.ts'
import { SEEDED_USER_IDS, createPayloads } from '../scenarios/index.js'
import type { Catalog } from '../scenarios/payloads.js'
import { capacityChart } from './chart.ts'
import { runOpenLoop, type Outgoing } from './open-loop.ts'
import { capacityLine, stepsTable, type CapacityStep, type TargetReport } from './report.ts'
import { findCapacity, holds, type CapacitySla } from './search.ts'

/**
 * `npm run load:capacity`: the highest fixed arrival rate (open model) at which p95 stays under
 * the SLA and errors under their budget — for the backend directly and through the edge on a
 * local stack it starts, or for the edge at --target. Writes load/reports/capacity-<date>.md and
 * an SVG chart per target (into --out). Flags: tools/cli/program.ts.
 */

export interface CapacityArgs {
  target: ReturnType<typeof parseTarget>
  sla: CapacitySla
  stepS: number
  startRate: number
  maxSteps: number
  tolerance: number
  maxInFlight: number
  model: string
  out: string
}

/** The flags as the command line gives them (camel-cased by commander), before they are checked. */
export interface CapacityFlags {
  target?: string
  key?: string
  slaP95?: string
  maxErrorRate?: string
  stepS?: string
  startRate?: string
  maxSteps?: string
  tolerance?: string
  maxInFlight?: string
  model?: string
  out?: string
}

/** Checks `edge-infer capacity`'s flags; throws UsageError on anything it cannot use. */
export const capacityArgs = (values: CapacityFlags): CapacityArgs => {
  const whole = (name: string, text: string | undefined, fallback: number) => {
    const v = positiveNumber(name, text) ?? fallback
    if (!Number.isInteger(v)) throw new UsageError(`--${name} must be a whole number`)
    return v
  }
  const maxErrorRate = values.maxErrorRate === '0' ? 0 : (positiveNumber('max-error-rate', values.maxErrorRate) ?? 0.001)
  return {
    target: parseTarget(values.target, values.key),
    sla: { p95Ms: positiveNumber('sla-p95', values.slaP95) ?? 50, maxErrorRate },
    stepS: positiveNumber('step-s', values.stepS) ?? 3,
    startRate: positiveNumber('start-rate', values.startRate) ?? 100,
    maxSteps: whole('max-steps', values.maxSteps, 16),
    tolerance: positiveNumber('tolerance', values.tolerance) ?? 0.1,
    maxInFlight: whole('max-in-flight', values.maxInFlight, 256),
    model: values.model ?? 'credit-risk',
    out: values.out ?? join(ROOT, 'load/reports'),
  }
}

/** Distinct bodies cycled through: generated before the clock starts, so the sender spends its CPU on sending. */
const BODIES = 2_048
const REQUEST_TIMEOUT_MS = 5_000
const WARM_UP_S = 1
/** A pause before each step: the queue and the garbage an overloaded step left behind are not the next step's. */
const COOL_DOWN_MS = 1_000
const GROWTH = 2
const MAX_RATE = 50_000

/** Predict requests of the default mix (with its pins, fixes and refusals) for the edge. */
const edgeRequests = (catalog: Catalog, apiKey: string): Outgoing[] => {
  const payloads = createPayloads({ catalog, seed: 1 })
  return Array.from({ length: BODIES }, () => {
    const p = payloads.next()
    return { body: p.body, headers: { 'x-api-key': apiKey, ...p.headers }, kind: p.kind, expectedStatus: p.expectedStatus }
  })
}

/**
 * The backend-direct equivalent (unversioned: the newest version): the same valid applicants, their entity features filled in as
 * the edge fills them (the local seed for known ids, the spec's defaults otherwise), encoded
 * into one FP32 row each as the edge encodes them.
 */
const backendRequests = async (stack: LocalStack, model: string, catalog: Catalog): Promise<Outgoing[]> => {
  const res = await fetch(`${stack.backendUrl}/v2/models/${model}`, { headers: { authorization: `Bearer ${stack.inferToken}` } })
  if (!res.ok) throw new Error(`backend metadata answered ${res.status}`)
  const metadata = (await res.json()) as { features: unknown; postprocess?: { output: string } }
  const spec: FeatureSpec = featureSpec.parse(metadata.features)
  const width = specWidth(spec)
  const seeded = DEFAULT_FEATURE_SEED.user as Record<string, Record<string, FeatureValue>>
  const payloads = createPayloads({ catalog, seed: 1, mix: { fixShare: 0, refuseShare: 0 } })
  return Array.from({ length: BODIES }, (_, i) => {
    const p = payloads.next()
    const row = new Float32Array(width)
    encodeInstance(spec, { ...(p.instances[0] as Record<string, FeatureValue>), ...(p.entityId === undefined ? {} : seeded[p.entityId]) }, row)
    const request: InferRequest = {
      id: `capacity-${i}`,
      inputs: [{ name: spec.input, shape: [1, width], datatype: 'FP32', data: Array.from(row, (v) => Number(v.toPrecision(7))) }],
      ...(metadata.postprocess && { outputs: [{ name: metadata.postprocess.output }] }),
    }
    return {
      body: JSON.stringify(request),
      headers: { authorization: `Bearer ${stack.inferToken}` },
      kind: 'valid' as const,
      expectedStatus: 200,
    }
  })
}

interface Measured {
  name: string
  description: string
  url: string
  requests: Outgoing[]
  /** Local server processes whose CPU time is read per step. */
  processes: Record<string, number | undefined>
  /** The backend whose batch-size histogram is read per step, when local. */
  backendUrl?: string
}

const measure = async (args: CapacityArgs, target: Measured, progress: (line: string) => void): Promise<TargetReport> => {
  let cursor = 0
  const next = () => target.requests[cursor++ % target.requests.length]
  const run = (rate: number, durationS: number) => runOpenLoop({ url: target.url, rate, durationS, maxInFlight: args.maxInFlight, timeoutMs: REQUEST_TIMEOUT_MS, next })
  await run(args.startRate, WARM_UP_S)
  const loadBefore = loadAverage()
  const search = await findCapacity<CapacityStep>({
    sla: args.sla, startRate: args.startRate, growth: GROWTH, tolerance: args.tolerance, maxSteps: args.maxSteps, maxRate: MAX_RATE, confirmBreaks: true,
    probe: async (rate, phase) => {
      await new Promise((r) => setTimeout(r, COOL_DOWN_MS))
      const cpuBefore = Object.fromEntries(Object.entries(target.processes).map(([name, pid]) => [name, pid === undefined ? Number.NaN : processCpuMicros(pid)]))
      const senderBefore = process.cpuUsage()
      const batchBefore = target.backendUrl ? await scrapeBatchCounters(target.backendUrl, args.model) : undefined
      const { outcomes, elapsedS } = await run(rate, args.stepS)
      const batchAfter = target.backendUrl ? await scrapeBatchCounters(target.backendUrl, args.model) : undefined
      const sender = process.cpuUsage(senderBefore)
      const n = answered(outcomes)
      const cpuUsPerRequest = Object.fromEntries(Object.entries(target.processes).flatMap(([name, pid]) =>
        pid === undefined || n === 0 ? [] : [[name, (processCpuMicros(pid) - cpuBefore[name]) / n]]))
      // The sender shares the cores: what it spends is what the servers could not.
      if (n > 0) cpuUsPerRequest.sender = (sender.user + sender.system) / n
      const step: CapacityStep = {
        rate, phase, achievedRate: n / elapsedS, ...latencySummary(outcomes.latenciesMs), errorRate: errorRate(outcomes), answered: n,
        expectedRefusals: outcomes.expectedRefusals, cpuUsPerRequest, loadAverage1m: loadavg()[0],
        ...(batchBefore && batchAfter && { meanBatch: meanBatchSize(batchBefore, batchAfter) }),
      }
      progress(`${target.name}: ${phase} ${rate} req/s → p95 ${step.p95Ms.toFixed(1)} ms, errors ${(step.errorRate * 100).toFixed(2)}% → ${holds(args.sla, step) ? 'held' : 'broke'}`)
      return step
    },
  })
  return { name: target.name, description: target.description, search, chartFile: '', loadBefore, loadAfter: loadAverage() }
}

/** Measures and writes the report; `command` is the command line the report names. Answers the exit code. */
export const runCapacity = async (args: CapacityArgs, command: string): Promise<number> => {
  installSignalHandlers()
  const progress = (line: string) => process.stderr.write(`${line}\n`)
  const stack = args.target.kind === 'local' ? await startLocalStack(progress) : undefined
  try {
    const edgeUrl = stack?.edgeUrl ?? (args.target.kind === 'remote' ? args.target.url : '')
    const apiKey = stack?.apiKey ?? (args.target.kind === 'remote' ? args.target.apiKey : '')
    const catalog = await fetchCatalog(edgeUrl, apiKey, args.model)
    const predictPath = createPayloads({ catalog, knownIds: SEEDED_USER_IDS }).path
    const targets: Measured[] = []
    if (stack) {
      targets.push({
        name: 'backend', description: `the backend directly: POST /v2/models/${args.model}/infer, one pre-encoded FP32 row per request`,
        url: `${stack.backendUrl}/v2/models/${args.model}/infer`, requests: await backendRequests(stack, args.model, catalog),
        processes: { backend: stack.backendPid }, backendUrl: stack.backendUrl,
      })
    }
    targets.push({
      name: 'edge', description: `through the edge: POST ${predictPath}, the default scenario mix (entity hits and misses, pins, fixed and refused inputs)${stack ? ', the edge in workerd in front of the same backend' : ''}`,
      url: `${edgeUrl}${predictPath}`, requests: edgeRequests(catalog, apiKey),
      processes: stack ? { workerd: stack.workerdPid, backend: stack.backendPid } : {}, ...(stack && { backendUrl: stack.backendUrl }),
    })
    const reports: TargetReport[] = []
    for (const target of targets) reports.push(await measure(args, target, progress))

    const date = new Date().toISOString().slice(0, 10)
    await mkdir(args.out, { recursive: true })
    for (const report of reports) {
      report.chartFile = `capacity-${date}-${report.name}.svg`
      await writeFile(join(args.out, report.chartFile), capacityChart({
        title: `${report.name}: latency and errors vs offered load (SLA p95 < ${args.sla.p95Ms} ms)`,
        steps: report.search.steps, slaP95Ms: args.sla.p95Ms, maxErrorRate: args.sla.maxErrorRate,
        capacityRate: report.search.capacity?.rate, kneeRate: report.search.knee?.rate,
      }))
    }
    const markdown = [
      `# Capacity at an SLA — ${date}`,
      '',
      `SLA: p95 < ${args.sla.p95Ms} ms and at most ${(args.sla.maxErrorRate * 100).toFixed(2)}% failures (transport errors, timeouts of ${REQUEST_TIMEOUT_MS} ms, arrivals over the in-flight cap of ${args.maxInFlight}, any status but the one the input deserves; refusals the mix asked for are not failures).`,
      `Open model: requests leave on a fixed schedule whatever the answers, latency counted from the scheduled time; ${args.stepS} s per step (each after a ${COOL_DOWN_MS / 1000} s pause; ${WARM_UP_S} s of warm-up first), the rate ×${GROWTH} until the SLA breaks (a broken step is run once more and the better run counts: neighbours on shared cores only add latency), then bisected to ${(args.tolerance * 100).toFixed(0)}% (at most ${args.maxSteps} steps).`,
      `Machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}) shared with other work, Node ${process.version}; the sender runs on the same cores as the servers. Judge ratios, not absolutes.`,
      `Command: \`${command}\``,
      '',
      ...reports.flatMap((r) => [
        `## ${r.name}`,
        '',
        r.description + '.',
        '',
        `**${capacityLine(r)}.**`,
        '',
        `![${r.name} capacity chart](${r.chartFile})`,
        '',
        stepsTable(r, (s) => holds(args.sla, s)),
        '',
        `Load average (1/5/15 min, as \`uptime\` prints it) before ${r.loadBefore}, after ${r.loadAfter}. CPU µs/req: the process's CPU time (all threads) over the step ÷ answers; “sender” is this command's own (the load generator, on the same cores). Mean batch: rows per executed batch from the backend's \`edge_infer_backend_batch_size_rows\` histogram, difference over the step.`,
        '',
      ]),
    ].join('\n')
    const reportFile = join(args.out, `capacity-${date}.md`)
    await writeFile(reportFile, markdown)
    process.stdout.write(`${reports.map(capacityLine).join('\n')}\nreport: ${reportFile}\n`)
    return 0
  } finally {
    await stack?.stop()
    await cleanUp()
  }
}

// Run as a file (`tsx load/capacity/main.ts …`): the same as `edge-infer capacity …`.
runIfMain(import.meta.url, ['capacity'])
