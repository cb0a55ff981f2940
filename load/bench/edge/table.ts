import type { LoadResult } from '../../harness/autocannon.ts'
import { formatRuntimeTable, measured, type RuntimeRow } from '../../harness/table.ts'
import type { PipelineResult } from './pipeline.ts'
import type { WorkerdPipelineResult } from './workerd-pipeline.ts'

export interface EndToEnd {
  /** The version of the Node the backend ran on (workerd's host stays on the benchmark's own). */
  node: string
  backend: LoadResult
  edge: LoadResult
  connections: number
  durationS: number
  /** CPU per completed request of the backend process (backend row) and of workerd (edge row). */
  backendCpuUs: number
  workerdCpuUs: number
}

export const PIPELINE_TARGET_US = 150

const int = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-')
const us = (x: number): string => (Number.isFinite(x) ? `${x < 100 ? x.toFixed(1) : Math.round(x)} µs` : '-')
const ms = (x: number): string => (Number.isFinite(x) ? `${Number.isInteger(x) ? x : x.toFixed(2)} ms` : '-')
const signed = (x: number): string => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${Number.isInteger(x) ? x : x.toFixed(2)}` : '-')
const failures = (l: LoadResult): string => `${l.non2xx}/${l.errors}${l.timeouts > 0 ? ` (${l.timeouts} t/o)` : ''}`
/** Little's law: mean time in system = connections ÷ throughput (sub-millisecond resolution). */
const littleMs = (l: LoadResult, connections: number): number => (l.reqPerSec > 0 ? (connections * 1_000) / l.reqPerSec : Number.NaN)

const HEADERS = ['measurement', 'inst', 'features', 'p50', 'p50 best proc', 'p99', 'mean', 'req/s', 'CPU µs/req', 'non-2xx/err', 'edge adds p50/p99', 'target']
const ALIGN = ['left', 'right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left'] as const

/** The lowest of the per-process p50s: what the code costs when no neighbour shares its core. */
export const bestProcessP50Us = (r: PipelineResult): number => Math.min(...r.processP50sUs)

export const isTargetCase = (r: PipelineResult): boolean => r.instances === 1 && r.cache === 'warm' && !r.floor

const pipelineRow = (r: PipelineResult): RuntimeRow => {
  const label = r.floor ? 'in-process floor: bare Hono app (read body, JSON.parse, c.json)' : 'in-process pipeline, app.request() → IN-PROCESS STAND-IN backend'
  const features = r.floor ? '-' : r.cache === 'warm' ? 'warm (cache hit)' : 'cold (cache miss → memory store)'
  return {
    key: `${label} ${r.instances} ${features}`,
    node: r.node,
    cells: [
      label, String(r.instances), features,
      measured(r.p50Us, us), measured(bestProcessP50Us(r), us), measured(r.p99Us, us), measured(r.meanUs, us), '-', measured(r.cpuUsPerRequest, int), '0/0', '-',
      isTargetCase(r) ? `best-proc p50 < ${PIPELINE_TARGET_US} µs: ${bestProcessP50Us(r) < PIPELINE_TARGET_US ? 'PASS' : 'MISS'}` : '',
    ],
  }
}

const loadRow = (e2e: EndToEnd, label: string, features: string, l: LoadResult, cpuUs: number, added: string): RuntimeRow => ({
  key: label,
  node: e2e.node,
  cells: [
    label, '1', features, measured(l.p50Ms, ms), '-', measured(l.p99Ms, ms), measured(littleMs(l, e2e.connections), ms), measured(l.reqPerSec, int),
    measured(cpuUs, int), failures(l), added, '',
  ],
})

const endToEndRows = (e2e: EndToEnd): RuntimeRow[] => {
  const addedP50 = e2e.edge.p50Ms - e2e.backend.p50Ms
  const addedP99 = e2e.edge.p99Ms - e2e.backend.p99Ms
  const addedMean = littleMs(e2e.edge, e2e.connections) - littleMs(e2e.backend, e2e.connections)
  return [
    loadRow(e2e, 'backend direct, POST /v2/models/credit-risk/infer (1-row tensor)', 'pre-encoded', e2e.backend, e2e.backendCpuUs, ''),
    loadRow(e2e, 'edge in workerd → backend, POST /v1/models/credit-risk/predict', 'warm (cache hit)', e2e.edge, e2e.workerdCpuUs,
      `${signed(addedP50)} / ${signed(addedP99)} ms (mean ${signed(Number(addedMean.toFixed(2)))})`),
  ]
}

/** No Node runs these rows: one each, whatever BENCH_NODES says. */
const workerdRow = (r: WorkerdPipelineResult): RuntimeRow => {
  const label = r.app === 'floor' ? 'in workerd floor: bare Hono app (batch means: median, p90)' : 'in workerd pipeline → STAND-IN (batch means: median, p90)'
  return { key: label, cells: [label, '1', r.app === 'floor' ? '-' : 'warm (cache hit)', us(r.medianUs), '-', us(r.p90Us), '-', '-', '-', '0/0', '-', ''] }
}

/** The one table: every row from the same run, each runtime's beside the others'. */
export const formatEdgeTable = (pipeline: readonly PipelineResult[], workerd: readonly WorkerdPipelineResult[], e2e: readonly EndToEnd[]): string =>
  formatRuntimeTable(HEADERS, [...pipeline.map(pipelineRow), ...workerd.map(workerdRow), ...e2e.flatMap(endToEndRows)], [...ALIGN])
