import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../../backend/logger.ts'
import { StatsPublisher, ownMetricLines } from '../../../backend/monitor/stats-publisher.ts'
import { createMetrics } from '../../../backend/monitor/metrics.ts'
import { startUpstashAdapter, type UpstashAdapter } from '../../../dev/upstash-adapter/server.ts'
import { REPLICA_STATS_PODS_KEY, replicaStatsKey, type ReplicaStatsSnapshot } from '../../../shared/replica-stats.ts'
import { createUpstashClient } from '../../../shared/upstash-client.ts'
import { startRedisServer, type RedisServer } from '../../dev/support/redis-server.ts'

/** One replica's stats publisher against a real redis-server (behind the Upstash adapter), and against one that never answers. */

const TOKEN = 'stats-publisher-test-token-0123456789'
let redis: RedisServer
let adapter: UpstashAdapter

beforeAll(async () => {
  redis = await startRedisServer()
  adapter = await startUpstashAdapter({ redisPort: redis.port, token: TOKEN })
})

afterAll(async () => {
  await adapter?.close()
  await redis?.stop()
})

const logs = () => {
  const lines: Array<Record<string, unknown>> = []
  return { lines, logger: createLogger('info', (line) => void lines.push(JSON.parse(line) as Record<string, unknown>)) }
}

describe('StatsPublisher', () => {
  it('writes the backend\'s own metrics under the pod\'s key, expiring after three periods, and names the pod in the set', async () => {
    const metrics = createMetrics({ depths: () => [], capacities: () => [], ready: () => true })
    const client = createUpstashClient({ url: adapter.url, token: TOKEN })
    const { logger } = logs()
    await new StatsPublisher({ redis: client, pod: 'pod-1', everyMs: 60_000, timeoutMs: 2_000, exposition: () => metrics.exposition(), logger }).publish()
    const snapshot = JSON.parse((await client.get<string>(replicaStatsKey('pod-1')))!) as ReplicaStatsSnapshot
    expect(snapshot.pod).toBe('pod-1')
    expect(snapshot.metrics).toMatch(/^edge_infer_backend_ready 1$/m)
    // The process and Node.js defaults stay out of the snapshot.
    expect((await metrics.exposition())).toMatch(/^edge_infer_backend_process_cpu_seconds_total /m)
    expect(snapshot.metrics).not.toMatch(/process_cpu|nodejs_/)
    const ttl = await client.pttl(replicaStatsKey('pod-1'))
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(180_000)
    expect(await client.zrange<string[]>(REPLICA_STATS_PODS_KEY, 0, -1)).toContain('pod-1')
  })

  it('gives up within its budget when Redis never answers, warning once per spell', async () => {
    const sockets = new Set<Socket>()
    const silent: Server = createServer((socket) => sockets.add(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const { port } = silent.address() as { port: number }
    const { lines, logger } = logs()
    const publisher = new StatsPublisher({ redis: createUpstashClient({ url: `http://127.0.0.1:${port}`, token: TOKEN, requestTimeoutMs: 100 }), pod: 'pod-2', everyMs: 60_000, timeoutMs: 100, exposition: async () => '', logger })
    try {
      await publisher.publish()
      await publisher.publish()
      expect(lines.filter((l) => l.msg === 'backend stats not published to Redis')).toHaveLength(1)
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })
})

describe('ownMetricLines', () => {
  it('keeps the samples and HELP/TYPE lines of the backend\'s metrics, a histogram\'s series included', () => {
    const text = [
      '# HELP edge_infer_backend_batch_size_rows Rows per batch',
      '# TYPE edge_infer_backend_batch_size_rows histogram',
      'edge_infer_backend_batch_size_rows_bucket{le="1",model="m",version="1"} 2',
      'edge_infer_backend_batch_size_rows_count{model="m",version="1"} 2',
      '# HELP edge_infer_backend_process_cpu_seconds_total CPU',
      'edge_infer_backend_process_cpu_seconds_total 1.5',
      'edge_infer_backend_ready 1',
    ].join('\n')
    expect(ownMetricLines(text).split('\n')).toEqual([
      '# HELP edge_infer_backend_batch_size_rows Rows per batch',
      '# TYPE edge_infer_backend_batch_size_rows histogram',
      'edge_infer_backend_batch_size_rows_bucket{le="1",model="m",version="1"} 2',
      'edge_infer_backend_batch_size_rows_count{model="m",version="1"} 2',
      'edge_infer_backend_ready 1',
    ])
  })
})
