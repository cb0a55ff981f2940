/**
 * Where each backend replica leaves its stats for the edge's `GET /v1/backend/stats` (the edge
 * cannot list pods): one string key per pod holding a snapshot, expiring after a few publish
 * periods so a dead pod drops out, and one sorted set naming the pods (score: when the pod's key
 * expires, ms) so the edge reads a bounded number of keys instead of scanning. Defined once here:
 * backend/monitor/stats-publisher.ts writes them, edge/routes/backend-stats.ts reads them.
 */
export const REPLICA_STATS_PREFIX = 'backend-stats:'

/** The sorted set of pod names. */
export const REPLICA_STATS_PODS_KEY = `${REPLICA_STATS_PREFIX}pods`

/** One pod's snapshot. */
export const replicaStatsKey = (pod: string): string => `${REPLICA_STATS_PREFIX}pod:${pod}`

/** The most pods the edge reads in one answer (newest first). */
export const REPLICA_STATS_MAX_PODS = 256

/** What a replica stores under its key (JSON). */
export interface ReplicaStatsSnapshot {
  pod: string
  /** ISO 8601, the replica's clock. */
  published_at: string
  /** The backend's own metrics as Prometheus text: what its `/metrics` answers of them. */
  metrics: string
}
