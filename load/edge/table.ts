import type { LoadResult } from '../autocannon.ts'
import { formatTable } from '../table.ts'
import type { PipelineResult } from './pipeline.ts'
import type { WorkerdPipelineResult } from './workerd-pipeline.ts'

export interface EndToEnd {
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

const pipelineRow = (r: PipelineResult): string[] => [
  r.floor ? 'in-process floor: bare Hono app (read body, JSON.parse, c.json)' : 'in-process pipeline, app.request() → IN-PROCESS STAND-IN backend',
  String(r.instances),
  r.floor ? '-' : r.cache === 'warm' ? 'warm (cache hit)' : 'cold (cache miss → memory store)',
  us(r.p50Us), us(bestProcessP50Us(r)), us(r.p99Us), us(r.meanUs), '-', int(r.cpuUsPerRequest), '0/0', '-',
  isTargetCase(r) ? `best-proc p50 < ${PIPELINE_TARGET_US} µs: ${bestProcessP50Us(r) < PIPELINE_TARGET_US ? 'PASS' : 'MISS'}` : '',
]

const loadRow = (label: string, instances: string, features: string, l: LoadResult, connections: number, cpuUs: number, added: string): string[] => [
  label, instances, features, ms(l.p50Ms), '-', ms(l.p99Ms), ms(littleMs(l, connections)), int(l.reqPerSec), int(cpuUs), failures(l), added, '',
]

const workerdRow = (r: WorkerdPipelineResult): string[] => [
  r.app === 'floor' ? 'in workerd floor: bare Hono app (batch means: median, p90)' : 'in workerd pipeline → STAND-IN (batch means: median, p90)',
  '1', r.app === 'floor' ? '-' : 'warm (cache hit)', us(r.medianUs), '-', us(r.p90Us), '-', '-', '-', '0/0', '-', '',
]

/** The one table: every row from the same run. */
export const formatEdgeTable = (pipeline: readonly PipelineResult[], workerd: readonly WorkerdPipelineResult[], e2e: EndToEnd | undefined): string => {
  const rows = [...pipeline.map(pipelineRow), ...workerd.map(workerdRow)]
  if (e2e) {
    const addedP50 = e2e.edge.p50Ms - e2e.backend.p50Ms
    const addedP99 = e2e.edge.p99Ms - e2e.backend.p99Ms
    const addedMean = littleMs(e2e.edge, e2e.connections) - littleMs(e2e.backend, e2e.connections)
    rows.push(
      loadRow('backend direct, POST /v2/models/credit-risk/infer (1-row tensor)', '1', 'pre-encoded', e2e.backend, e2e.connections, e2e.backendCpuUs, ''),
      loadRow('edge in workerd → backend, POST /v1/models/credit-risk/predict', '1', 'warm (cache hit)', e2e.edge, e2e.connections, e2e.workerdCpuUs,
        `${signed(addedP50)} / ${signed(addedP99)} ms (mean ${signed(Number(addedMean.toFixed(2)))})`),
    )
  }
  return formatTable(HEADERS, rows, [...ALIGN])
}
