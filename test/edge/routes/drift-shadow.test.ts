import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import { BackendMonitor } from '../../../edge/rollout/backend-monitor.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { RequestMetrics, type Tally } from '../../../edge/stores/tallies/tally.ts'
import { InProcessBackendStandIn } from '../../../load/bench/edge/in-process-backend.ts'
import { creditRiskMetadata } from '../../../load/bench/edge/workload.ts'

const admin = generateApiKey('test')
/** Whatever the backend says of a version: the edge passes it through and adds its own parts. */
const BACKEND_REPORT = { model: 'credit-risk', version: 2, note: 'as the backend wrote it' }

/** Request metrics whose totals fail while `down` (Redis unreachable). */
class Metrics extends RequestMetrics {
  down = false
  override async totals(): Promise<Tally> {
    if (this.down) throw new Error('redis down')
    return super.totals()
  }
}

describe('GET /v1/models/{m}/versions/{v}/drift: the shadow comparison', () => {
  const metrics = new Metrics()
  let app: ReturnType<typeof createApp>
  beforeAll(async () => {
    const standIn = new InProcessBackendStandIn(await creditRiskMetadata())
    const drift = new BackendMonitor({ baseUrl: 'http://backend.invalid', fetch: async () => Response.json(BACKEND_REPORT) })
    app = createApp({
      parts: {
        keys: new MemoryKeyStore([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 100_000 }]),
        transport: standIn,
        catalog: new ModelCatalog({ transport: standIn }),
        rollouts: new MemoryRolloutStore(),
        requestMetrics: metrics,
        drift,
      },
      log: () => {},
    })
  })
  const report = async (version: number) => (await app.request(`/v1/models/credit-risk/versions/${version}/drift`, { headers: { authorization: `Bearer ${admin}` } })).json() as Promise<Record<string, unknown>>

  it('carries the version\'s comparisons as a shadow only, beside the backend\'s report; null when the counts cannot be read', async () => {
    metrics.shadowCompared({ model: 'credit-risk', servedVersion: 1, shadowVersion: 2, agreeing: 3, diffs: [0.01, 0.02, 0.03, 0.3] })
    metrics.shadowCompared({ model: 'credit-risk', servedVersion: 2, shadowVersion: 1, agreeing: 1, diffs: [0.5] })
    const two = await report(2)
    expect(two).toMatchObject(BACKEND_REPORT)
    expect(two.shadow_comparison).toMatchObject([{ model: 'credit-risk', version: 1, shadow_version: 2, rows: 4, agreeing: 3, agreement: 0.75 }])
    expect((await report(3)).shadow_comparison).toEqual([])
    metrics.down = true
    const unread = await report(2)
    expect(unread).toMatchObject(BACKEND_REPORT)
    expect(unread.shadow_comparison).toBeNull()
  })
})
