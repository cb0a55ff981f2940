import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler'
import { parseAllDocuments } from 'yaml'
import { describe, expect, it } from 'vitest'
import { ADAPTER_RULES_ANNOTATION, REPLICA_CAPACITY_ANNOTATION, REQUEST_RATE_METRIC, REQUEST_RATE_WINDOW_S, queueDepthQuery, requestRateQuery } from '../../../infra/k8s/autoscaling.ts'
import { QUEUE_DEPTH_METRIC, defaultConfig } from '../../../infra/k8s/config.ts'
import { RENDERED_DIR } from '../../../infra/k8s/render.ts'
import { HPA_TOLERANCE, MEASURED, TARGET_REQUESTS_PER_SECOND_PER_REPLICA, TARGET_ROWS_PER_REPLICA, TARGET_SHARE_OF_KNEE } from '../../../infra/k8s/sizing.ts'
import { BACKEND_METRICS } from '../../../shared/backend-metrics.ts'

/** The committed file's one document, parsed. */
const committedDocument = async (file: string): Promise<Record<string, unknown>> => {
  const docs = parseAllDocuments(await readFile(join(RENDERED_DIR, file), 'utf8')).map((d) => d.toJS() as Record<string, unknown>)
  expect(docs).toHaveLength(1)
  return docs[0]!
}

describe('the committed ScaledObject (autoscaling-keda.yaml)', () => {
  it('passes the KEDA model schema, with a queue-depth and a request-rate trigger', async () => {
    const so = new ScaledObject(await committedDocument('autoscaling-keda.yaml') as never)
    expect(() => so.validate()).not.toThrow()
    const triggers = so.spec!.triggers
    expect(triggers.map((t) => [t.name, t.type, t.metricType])).toEqual([['queue-depth', 'prometheus', 'AverageValue'], ['request-rate', 'prometheus', 'AverageValue']])
    expect(triggers[0]!.metadata).toMatchObject({ query: queueDepthQuery(defaultConfig), threshold: String(TARGET_ROWS_PER_REPLICA) })
    expect(triggers[1]!.metadata).toMatchObject({ query: requestRateQuery(defaultConfig), threshold: String(TARGET_REQUESTS_PER_SECOND_PER_REPLICA) })
  })

  it('a lost metric is an error that trips the fallback, never a 0', async () => {
    const so = new ScaledObject(await committedDocument('autoscaling-keda.yaml') as never)
    for (const t of so.spec!.triggers) expect(t.metadata.ignoreNullValues, t.name).toBe('false')
    expect(so.spec!.fallback!.replicas).toBeGreaterThan(so.spec!.minReplicaCount!)
  })

  it("the rate query reads the requests counter named in shared/backend-metrics.ts, over three scrapes", () => {
    expect(requestRateQuery(defaultConfig)).toBe(`sum(rate(${BACKEND_METRICS.requests}{namespace="${defaultConfig.namespace}",service="${defaultConfig.name}"}[${REQUEST_RATE_WINDOW_S}s]))`)
    expect(REQUEST_RATE_WINDOW_S).toBe(30)
  })

  it('the rate target is a share of the replica capacity both autoscalers state, leaving room for a spike', async () => {
    for (const file of ['autoscaling-keda.yaml', 'autoscaling-hpa.yaml']) {
      const doc = await committedDocument(file) as { metadata: { annotations: Record<string, string> } }
      expect(doc.metadata.annotations[REPLICA_CAPACITY_ANNOTATION], file).toBe(String(MEASURED.replicaRowsPerSecond))
    }
    expect(TARGET_REQUESTS_PER_SECOND_PER_REPLICA).toBe(Math.round(TARGET_SHARE_OF_KNEE * MEASURED.replicaRowsPerSecond))
    // Pods the HPA leaves at up to its tolerance above the target take a doubling of the rate without passing their capacity until new pods serve.
    expect(TARGET_SHARE_OF_KNEE * (1 + HPA_TOLERANCE) * 2).toBeLessThanOrEqual(1)
    expect(TARGET_SHARE_OF_KNEE).toBeGreaterThanOrEqual(0.4)
    // The capacity is the CPU-time figure, above the knee a load generator on the same cores allowed.
    expect(MEASURED.replicaRowsPerSecond).toBeGreaterThan(MEASURED.kneeRowsPerSecond)
  })
})

describe('the committed HPA-only variant (autoscaling-hpa.yaml)', () => {
  it('passes the autoscaling/v2 model schema, with both signals as Pods metrics', async () => {
    const hpa = new HorizontalPodAutoscaler(await committedDocument('autoscaling-hpa.yaml') as never)
    expect(() => hpa.validate()).not.toThrow()
    expect(hpa.spec!.metrics!.map((m) => [m.type, m.pods!.metric.name, m.pods!.target.type, m.pods!.target.averageValue])).toEqual([
      ['Pods', QUEUE_DEPTH_METRIC, 'AverageValue', String(TARGET_ROWS_PER_REPLICA)],
      ['Pods', REQUEST_RATE_METRIC, 'AverageValue', String(TARGET_REQUESTS_PER_SECOND_PER_REPLICA)],
    ])
    expect(REQUEST_RATE_METRIC).toBe('edge_infer_backend_requests_per_second')
  })

  it('names the prometheus-adapter rules it depends on, the rate over the same range as KEDA', async () => {
    const hpa = new HorizontalPodAutoscaler(await committedDocument('autoscaling-hpa.yaml') as never)
    const rules = JSON.parse(hpa.metadata!.annotations![ADAPTER_RULES_ANNOTATION]!) as Array<{ seriesQuery: string; metricsQuery: string; name?: { matches: string; as: string } }>
    expect(rules.map((r) => r.seriesQuery)).toEqual([`${QUEUE_DEPTH_METRIC}{namespace!="",pod!=""}`, `${BACKEND_METRICS.requests}{namespace!="",pod!=""}`])
    const rate = rules[1]!
    expect(BACKEND_METRICS.requests.replace(new RegExp(rate.name!.matches), rate.name!.as.replace('${1}', '$1'))).toBe(REQUEST_RATE_METRIC)
    expect(rate.metricsQuery).toContain(`rate(<<.Series>>{<<.LabelMatchers>>}[${REQUEST_RATE_WINDOW_S}s])`)
  })
})
