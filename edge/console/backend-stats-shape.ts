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

/** One replica's stats: `pod` names it (null when read through `BACKEND_URL`, which does not say). */
export interface ReplicaStats extends BackendStats {
  pod: string | null
  /** When the replica wrote the snapshot (its clock); null when read just now through `BACKEND_URL`. */
  published_at: string | null
}

/**
 * `GET /v1/backend/stats` as answered: the fields of `BackendStats` summed over every replica, and
 * each replica's own. `source` says how they were found: `redis`, every replica's snapshot; `backend_url`,
 * the one replica `BACKEND_URL` reached (no Redis, or no replica published yet).
 */
export interface BackendStatsAnswer extends BackendStats {
  source: 'redis' | 'backend_url'
  replicas: ReplicaStats[]
}
