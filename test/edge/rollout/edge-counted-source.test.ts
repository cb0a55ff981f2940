import { describe, expect, it } from 'vitest'
import { MemoryGroundTruth } from '../../../edge/stores/ground-truth/memory.ts'
import { withEdgeCounts } from '../../../edge/rollout/edge-counted-source.ts'
import type { MonitorSource } from '../../../edge/rollout/monitor-source.ts'
import { window } from './support.ts'

const NOW = 1_000 * 60_000
/** The backend's numbers for every arm: 100 requests, 2 errors. */
const backend: MonitorSource = { arm: async (_model, version) => window(version, { requests: 100, errors: 2 }) }

describe('withEdgeCounts', () => {
  it('adds the window\'s edge failures to requests and errors, and the labels\' realized quality, minute range inclusive', async () => {
    const store = new MemoryGroundTruth({ now: () => NOW })
    for (const minute of [995, 996, 1_000]) await store.edgeFailure('m', 3, minute)
    await store.edgeFailure('m', 2, 1_000)
    const key = { tenant: 't', requestId: 'request-1' }
    await store.serve(key, { model: 'm', version: 3, variant: 'stable', at: 0, labels: ['no', 'yes'], scores: [0.9, 0.8, 0.1] }, 60)
    const [served] = await store.records([key])
    const labelled = (index: number, minute: number, positive: boolean) =>
      ({ key, servedId: served!.servedId, index, label: positive ? 'yes' : 'no', count: { model: 'm', version: 3, minute, score: served!.scores[index], positive, delaySeconds: 5 } })
    await store.label([labelled(0, 1_000, true), labelled(1, 996, false), labelled(2, 995, true)])
    const source = withEdgeCounts(backend, store, { threshold: async () => 0.5, now: () => NOW + 59_000 })
    // Five minutes: 996 through 1000.
    const arm = await source.arm('m', 3, 5)
    expect(arm).toMatchObject({ requests: 102, errors: 4, edge_failures: 2 })
    expect(arm.realized).toMatchObject({ labels: 2, accuracy: 0.5 })
  })

  it('gives no realized figures when the threshold is not a bin edge, and still the failures', async () => {
    const store = new MemoryGroundTruth({ now: () => NOW })
    await store.edgeFailure('m', 3, Math.floor(NOW / 60_000))
    const arm = await withEdgeCounts(backend, store, { threshold: async () => 0.33, now: () => NOW }).arm('m', 3, 1)
    expect(arm.realized).toBeUndefined()
    expect(arm).toMatchObject({ requests: 101, errors: 3, edge_failures: 1 })
  })
})
