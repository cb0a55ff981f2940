import type { Redis } from '@upstash/redis'
import { BACKEND_METRICS } from '../../shared/backend-metrics.ts'
import { REPLICA_STATS_PODS_KEY, replicaStatsKey, type ReplicaStatsSnapshot } from '../../shared/replica-stats.ts'
import { within } from '../../shared/upstash-client.ts'
import { errorFields, type Logger } from '../logger.ts'

/** How many periods a snapshot outlives its publish: one missed publish does not drop a live pod. */
const TTL_PERIODS = 3

const NAMES = Object.values(BACKEND_METRICS)

/**
 * The lines of the exposition the edge's stats read: the backend's own metrics, without the
 * process and Node.js defaults, which only make the snapshot bigger.
 */
export const ownMetricLines = (exposition: string): string =>
  exposition
    .split('\n')
    .filter((line) => {
      const name = line.startsWith('#') ? line.split(' ')[2] ?? '' : line.split(/[{ ]/, 1)[0]
      return NAMES.some((n) => name === n || name.startsWith(`${n}_`))
    })
    .join('\n')

export interface StatsPublisherOptions {
  redis: Redis
  pod: string
  /** Publish period; the key expires after `TTL_PERIODS` of them. */
  everyMs: number
  /** Budget of one publish. */
  timeoutMs: number
  exposition: () => Promise<string>
  logger: Logger
}

/**
 * Writes this replica's stats to Redis every `everyMs`, off the serving path: a timer, one publish
 * in flight at most (a slow Redis skips periods rather than queueing them), each bounded by
 * `timeoutMs`, failures logged once per spell.
 */
export class StatsPublisher {
  private timer: ReturnType<typeof setInterval> | undefined
  private inFlight: Promise<void> | undefined
  private failing = false

  constructor(private readonly options: StatsPublisherOptions) {}

  start(): void {
    void this.tick()
    this.timer = setInterval(() => void this.tick(), this.options.everyMs)
    this.timer.unref()
  }

  /** Stops publishing; the key expires by itself (a stopped pod leaves as a dead one does). */
  async close(): Promise<void> {
    clearInterval(this.timer)
    await this.inFlight
  }

  private tick(): Promise<void> {
    this.inFlight ??= this.publish().finally(() => (this.inFlight = undefined))
    return this.inFlight
  }

  /** One snapshot: the pod's key with its expiry, its name in the set, pods expired long ago pruned from it. */
  async publish(): Promise<void> {
    const { redis, pod, everyMs, timeoutMs, exposition, logger } = this.options
    try {
      const ttlMs = everyMs * TTL_PERIODS
      const now = Date.now()
      const snapshot: ReplicaStatsSnapshot = { pod, published_at: new Date(now).toISOString(), metrics: ownMetricLines(await within(exposition(), timeoutMs)) }
      const pipeline = redis.pipeline()
      pipeline.set(replicaStatsKey(pod), JSON.stringify(snapshot), { px: ttlMs })
      pipeline.zadd(REPLICA_STATS_PODS_KEY, { score: now + ttlMs, member: pod })
      pipeline.zremrangebyscore(REPLICA_STATS_PODS_KEY, '-inf', now - ttlMs)
      await within(pipeline.exec(), timeoutMs)
      if (this.failing) logger.info('backend stats reach Redis again', { pod })
      this.failing = false
    } catch (err) {
      if (!this.failing) logger.warn('backend stats not published to Redis', { pod, ...errorFields(err) })
      this.failing = true
    }
  }
}
