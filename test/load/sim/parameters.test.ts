import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { REQUEST_RATE_WINDOW_S, behavior, horizontalPodAutoscaler, scaledObject } from '../../../infra/k8s/autoscaling.ts'
import { defaultConfig } from '../../../infra/k8s/config.ts'
import { MEASURED, TARGET_REQUESTS_PER_SECOND_PER_REPLICA, TARGET_ROWS_PER_REPLICA } from '../../../infra/k8s/sizing.ts'
import { modelConfig } from '../../../backend/repository/model-config.ts'
import { batcherSettingsOf } from '../../../load/sim/batcher-settings.ts'
import { ROOT } from '../../../load/harness/servers.ts'
import { readHorizontalPodAutoscaler, readReplicaCapacity, readScaledObject, readScrapeIntervalS } from '../../../load/sim/scaler-config.ts'
import { replicaCapacity, type Tier } from '../../../load/sim/scenarios.ts'
import { readServiceTime, replicaServiceTime, serviceTimeAtCapacity } from '../../../load/sim/service-time.ts'

const dir = mkdtempSync(join(tmpdir(), 'sim-params-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('the autoscaler parameters the simulator reads from infra/k8s/rendered', () => {
  it('are what infra/k8s/autoscaling.ts sets', () => {
    const read = readScaledObject()
    const spec = scaledObject(defaultConfig).spec!
    expect(read).toMatchObject({
      source: 'keda',
      minReplicas: defaultConfig.minReplicas,
      maxReplicas: defaultConfig.maxReplicas,
      target: TARGET_ROWS_PER_REPLICA,
      rate: { target: TARGET_REQUESTS_PER_SECOND_PER_REPLICA, windowS: REQUEST_RATE_WINDOW_S },
      pollingIntervalS: spec.pollingInterval,
      fallback: spec.fallback,
      useCachedMetrics: false,
    })
    expect(read.behavior).toEqual(behavior)
    expect(readHorizontalPodAutoscaler()).toEqual({
      source: 'hpa',
      minReplicas: defaultConfig.minReplicas,
      maxReplicas: defaultConfig.maxReplicas,
      target: TARGET_ROWS_PER_REPLICA,
      rate: { target: TARGET_REQUESTS_PER_SECOND_PER_REPLICA, windowS: REQUEST_RATE_WINDOW_S },
      behavior,
    })
  })

  it('read both triggers by what they query, in either order, and the rate range from the query', () => {
    const object = scaledObject(defaultConfig)
    const spec = object.spec!
    const [depth, rate] = spec.triggers
    rate!.metadata = { ...rate!.metadata, query: rate!.metadata.query.replace(`[${REQUEST_RATE_WINDOW_S}s]`, '[60s]'), threshold: '5000' }
    spec.triggers = [rate!, depth!]
    const file = join(dir, 'keda-two.yaml')
    writeFileSync(file, stringify(object.toJSON()))
    expect(readScaledObject(file)).toMatchObject({ target: TARGET_ROWS_PER_REPLICA, rate: { target: 5000, windowS: 60 } })
  })

  it('a queue-depth trigger alone reads without a rate; a trigger on anything else is refused', () => {
    const object = scaledObject(defaultConfig)
    const spec = object.spec!
    spec.triggers = [spec.triggers[0]!]
    const file = join(dir, 'keda-one.yaml')
    writeFileSync(file, stringify(object.toJSON()))
    expect(readScaledObject(file).rate).toBeUndefined()
    spec.triggers = [spec.triggers[0]!, { ...spec.triggers[0]!, metadata: { ...spec.triggers[0]!.metadata, query: 'sum(up)' } }]
    writeFileSync(file, stringify(object.toJSON()))
    expect(() => readScaledObject(file)).toThrow(/sum\(up\)/)
  })

  it('follow a changed manifest, and take the HPA defaults for what it leaves out', () => {
    const object = scaledObject({ ...defaultConfig, minReplicas: 3, maxReplicas: 7 })
    const spec = object.spec!
    spec.triggers[0].metadata = { ...spec.triggers[0].metadata, threshold: '20' }
    spec.advanced = { horizontalPodAutoscalerConfig: { behavior: { scaleUp: { stabilizationWindowSeconds: 30 } } } }
    delete spec.pollingInterval
    const file = join(dir, 'keda.yaml')
    writeFileSync(file, stringify(object.toJSON()))
    const read = readScaledObject(file)
    expect(read).toMatchObject({ minReplicas: 3, maxReplicas: 7, target: 20, pollingIntervalS: 30, cooldownPeriodS: 300 })
    expect(read.behavior.scaleUp).toEqual({ stabilizationWindowSeconds: 30, selectPolicy: 'Max', policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }, { type: 'Pods', value: 4, periodSeconds: 15 }] })
    expect(read.behavior.scaleDown).toEqual({ stabilizationWindowSeconds: 300, selectPolicy: 'Max', policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }] })
  })

  it('read the HPA variant the same way', () => {
    const hpa = horizontalPodAutoscaler({ ...defaultConfig, maxReplicas: 5 }).toJSON()
    const file = join(dir, 'hpa.yaml')
    writeFileSync(file, stringify(hpa))
    expect(readHorizontalPodAutoscaler(file).maxReplicas).toBe(5)
  })

  it('the HPA variant takes the rate range from the prometheus-adapter rule it names', () => {
    const hpa = horizontalPodAutoscaler(defaultConfig).toJSON() as { metadata: { annotations: Record<string, string> } }
    const [key] = Object.keys(hpa.metadata.annotations)
    hpa.metadata.annotations[key!] = hpa.metadata.annotations[key!]!.replace(`[${REQUEST_RATE_WINDOW_S}s]`, '[45s]')
    const file = join(dir, 'hpa-rules.yaml')
    writeFileSync(file, stringify(hpa))
    expect(readHorizontalPodAutoscaler(file).rate).toEqual({ target: TARGET_REQUESTS_PER_SECOND_PER_REPLICA, windowS: 45 })
    delete (hpa.metadata as { annotations?: unknown }).annotations
    writeFileSync(file, stringify(hpa))
    expect(() => readHorizontalPodAutoscaler(file)).toThrow(/prometheus-adapter rule/)
  })

  it('the replica capacity: the figure the rate target is sized from, as the manifest states it', () => {
    expect(readReplicaCapacity()).toBe(MEASURED.replicaRowsPerSecond)
    const object = scaledObject(defaultConfig).toJSON() as { metadata: { annotations?: Record<string, string> } }
    const file = join(dir, 'keda-capacity.yaml')
    object.metadata.annotations = { ...object.metadata.annotations, 'edge-infer/replica-capacity-rows-per-second': '12000' }
    writeFileSync(file, stringify(object))
    expect(readReplicaCapacity(file)).toBe(12000)
    delete object.metadata.annotations
    writeFileSync(file, stringify(object))
    expect(() => readReplicaCapacity(file)).toThrow(/replica-capacity-rows-per-second/)
  })

  it('scrape interval: the ServiceMonitor of base.yaml', () => {
    expect(readScrapeIntervalS()).toBe(10)
  })
})

describe('the batcher settings', () => {
  it("are the model's config.json as the backend reads it", () => {
    const file = join(ROOT, 'models', 'credit-risk', 'config.json')
    const config = modelConfig.parse(JSON.parse(readFileSync(file, 'utf8')))
    expect(batcherSettingsOf('credit-risk')).toEqual({
      dispatch: config.dynamic_batching!.dispatch,
      maxBatchSize: config.max_batch_size,
      maxQueueDelayS: config.dynamic_batching!.max_queue_delay_us / 1e6,
      preferredBatchSizes: config.dynamic_batching!.preferred_batch_sizes,
      maxQueueSize: config.dynamic_batching!.max_queue_size,
      instances: config.instance_count,
    })
  })

  it("take the schema's defaults for what a config leaves out", () => {
    const config = JSON.parse(readFileSync(join(ROOT, 'models', 'credit-risk', 'config.json'), 'utf8')) as Record<string, unknown>
    mkdirSync(join(dir, 'models', 'bare'), { recursive: true })
    writeFileSync(join(dir, 'models', 'bare', 'config.json'), JSON.stringify({ ...config, name: 'bare', dynamic_batching: {}, instance_count: undefined }))
    expect(batcherSettingsOf('bare', join(dir, 'models'))).toEqual({ dispatch: 'idle', maxBatchSize: config.max_batch_size, maxQueueDelayS: 0.002, preferredBatchSizes: [], maxQueueSize: 4096, instances: 1 })
  })
})

describe("the simulated replica's service time", () => {
  const batcher = batcherSettingsOf('credit-risk')
  const tierWith = (serviceTime: Tier['serviceTime']): Tier => ({ batcher, serviceTime, routing: 'random', scrapeIntervalS: 10, seed: 1, slaP95S: 0.05 })

  it('drains exactly the capacity it is given, with the measured cost per batch', () => {
    const service = readServiceTime()
    for (const capacity of [12_000, MEASURED.replicaRowsPerSecond]) {
      const serviceTime = serviceTimeAtCapacity(service, capacity, batcher.maxBatchSize)
      expect(replicaCapacity(tierWith(serviceTime))).toBeCloseTo(capacity, 6)
      expect(serviceTime(0)).toBeCloseTo(service.fit.aUs / 1e6, 12)
    }
    expect(() => serviceTimeAtCapacity(service, 1e9, batcher.maxBatchSize)).toThrow(/no time per row/)
  })

  it("the committed capacity is what load/sim/service-time.json measured (one figure: re-measured, it moves in infra/k8s/sizing.ts)", () => {
    const measured = replicaCapacity(tierWith(replicaServiceTime(readServiceTime())))
    expect(Math.abs(measured - MEASURED.replicaRowsPerSecond)).toBeLessThan(1)
  })
})
