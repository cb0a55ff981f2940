import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { queueDepthQuery } from '../../../infra/k8s/autoscaling.ts'
import { LIVE_PATH, METRICS_PATH, QUEUE_DEPTH_METRIC, READY_PATH, defaultConfig } from '../../../infra/k8s/config.ts'
import { startBackend, type BackendProcess } from '../../backend/support/backend-process.ts'
import { DEMO_REPOSITORY } from '../../backend/support/fixture-repository.ts'

/** `# TYPE <name> <type>` lines of a Prometheus exposition. */
const types = (text: string): Map<string, string> =>
  new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]))

describe('the manifests against a running backend', () => {
  let backend: BackendProcess
  beforeAll(async () => {
    backend = await startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY })
  })
  afterAll(async () => {
    await backend?.stop()
  })

  it('exports the gauge the KEDA query sums, with series per version, and no gauge named like a counter', async () => {
    const text = await (await fetch(`${backend.url}${METRICS_PATH}`)).text()
    const declared = types(text)
    expect(queueDepthQuery(defaultConfig)).toContain(`${QUEUE_DEPTH_METRIC}{`)
    expect(declared.get(QUEUE_DEPTH_METRIC)).toBe('gauge')
    expect(text).toMatch(new RegExp(`^${QUEUE_DEPTH_METRIC}\\{model="credit-risk",version="2"\\} 0$`, 'm'))
    expect(declared.size).toBeGreaterThan(10)
    const gaugesNamedTotal = [...declared].filter(([name, type]) => type === 'gauge' && name.endsWith('_total')).map(([name]) => name)
    expect(gaugesNamedTotal).toEqual([])
  })

  it('answers the probe paths the Deployment uses', async () => {
    for (const path of [READY_PATH, LIVE_PATH]) expect((await fetch(`${backend.url}${path}`)).status, path).toBe(200)
  })
})
