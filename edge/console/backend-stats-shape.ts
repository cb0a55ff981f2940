/** What `GET /v1/backend/stats` answers: a module of types only, so the console's browser code can import it. */

/** One bucket of a histogram, not cumulative: batches of more rows than the previous bucket's bound, up to `le`. */
interface SizeBucket {
  le: number | '+Inf'
  count: number
}

export interface VersionStats {
  model: string
  version: string
  /** The execution provider its sessions run on (cpu, cuda), when the backend names one. */
  execution_provider: string | null
  queue_depth_rows: number
  queue_capacity_rows: number | null
  requests_by_status: Record<string, number>
  batches_by_reason: Record<string, number>
  batch_size: { buckets: SizeBucket[]; count: number; sum: number }
}

export interface Rejection {
  model: string
  reason: string
  /** The HTTP status the caller got for it; null for a reason this edge does not know. */
  status: number | null
  count: number
}

/** `GET /v1/backend/stats`: what the operator console shows of the backend, since its start. */
export interface BackendStats {
  fetched_at: string
  ready: boolean | null
  versions: VersionStats[]
  rejections: Rejection[]
}
