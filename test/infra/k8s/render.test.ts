import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { describe, expect, it } from 'vitest'
import { tracingWanted } from '../../../backend/monitor/tracing/index.ts'
import { settingsSchema } from '../../../backend/settings.ts'
import { queueDepthQuery } from '../../../infra/k8s/autoscaling.ts'
import { readFetchSettings } from '../../../backend/repository/fetch.ts'
import { IRSA_ROLE_ANNOTATION, IRSA_SKIP_ANNOTATION, terminationGraceSeconds } from '../../../infra/k8s/backend.ts'
import { LIVE_PATH, METRICS_PORT, METRICS_PORT_NAME, QUEUE_DEPTH_METRIC, READY_PATH, defaultConfig } from '../../../infra/k8s/config.ts'
import { EDGE_JOB, EDGE_SCRAPE_SECRET } from '../../../infra/k8s/edge-scrape.ts'
import { RENDERED_DIR, manifests, render } from '../../../infra/k8s/render.ts'
import { TARGET_ROWS_PER_REPLICA } from '../../../infra/k8s/sizing.ts'
import { tunnelOrigin } from '../../../infra/k8s/tunnel.ts'

type Obj = Record<string, unknown> & { kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } }

/** What a cluster would receive: the committed files, parsed. */
const committed = async (): Promise<Obj[]> => {
  const files = (await readdir(RENDERED_DIR)).filter((f) => f.endsWith('.yaml')).sort()
  const docs = await Promise.all(files.map(async (f) => parseAllDocuments(await readFile(join(RENDERED_DIR, f), 'utf8')).map((d) => d.toJS() as Obj)))
  return docs.flat()
}

const one = (objects: Obj[], kind: string, where: (o: Obj) => boolean = () => true): Obj => {
  const found = objects.filter((o) => o.kind === kind && where(o))
  expect(found, kind).toHaveLength(1)
  return found[0]!
}

// Narrow views of the fields the cross-checks read.
interface PodSpecView {
  containers: Array<{
    name: string
    ports: Array<{ name: string; containerPort: number }>
    env: Array<{ name: string; value?: string }>
    resources: { requests: Record<string, string>; limits: Record<string, string> }
    startupProbe: { httpGet: { path: string; port: string } }
    readinessProbe: { httpGet: { path: string; port: string } }
    livenessProbe: { httpGet: { path: string; port: string } }
    lifecycle: { preStop: { sleep: { seconds: number } } }
    securityContext: Record<string, unknown>
  }>
  initContainers: Array<{ env: Array<{ name: string; value?: string }>; envFrom?: unknown[]; securityContext: Record<string, unknown> }>
  terminationGracePeriodSeconds: number
  nodeSelector?: Record<string, string>
  tolerations?: unknown[]
  topologySpreadConstraints: Array<{ labelSelector: { matchLabels: Record<string, string> } }>
}
interface DeploymentView { metadata: Obj['metadata']; spec: { selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpecView } } }

/** The backend's Deployments (the tunnel's has its own test). */
const deployments = (objects: Obj[]) => objects.filter((o) => o.kind === 'Deployment' && o.metadata.namespace === defaultConfig.namespace) as unknown as DeploymentView[]
const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v)
const defaults = settingsSchema.parse({})

describe('infra/k8s rendering', () => {
  it('is deterministic and the committed YAML is a fresh render (run `npm run infra:render`)', async () => {
    expect(render()).toEqual(render())
    const fresh = render()
    const files = (await readdir(RENDERED_DIR)).filter((f) => f.endsWith('.yaml')).sort()
    expect(files).toEqual(Object.keys(fresh).sort())
    for (const [file, text] of Object.entries(fresh)) expect(await readFile(join(RENDERED_DIR, file), 'utf8'), file).toBe(text)
  })

  it('every object passes its model schema validation', () => {
    const all = Object.values(manifests()).flat()
    expect(all.length).toBeGreaterThanOrEqual(10)
    for (const o of all) expect(() => o.validate()).not.toThrow()
  })

  it('the validation is real: a wrongly typed port is refused', () => {
    const [svc] = manifests()['base.yaml'].filter((o) => (o as unknown as Obj).kind === 'Service')
    const broken = svc as unknown as { spec: { ports: Array<{ port: unknown }> }; validate(): void }
    broken.spec.ports[0]!.port = 'eight thousand'
    expect(() => broken.validate()).toThrow(/port/)
  })
})

describe('infra/k8s cross-references (committed YAML)', () => {
  it('Service, PDB, NetworkPolicy, ServiceMonitor and spread constraints select the pods of both Deployments', async () => {
    const objects = await committed()
    const ds = deployments(objects)
    expect(ds.map((d) => d.metadata.labels?.['edge-infer/variant']).sort()).toEqual(['cpu', 'gpu'])
    const svc = one(objects, 'Service') as unknown as { metadata: Obj['metadata']; spec: { selector: Record<string, string>; ports: Array<{ name: string; port: number; targetPort: string }> } }
    const pdb = one(objects, 'PodDisruptionBudget', (o) => o.metadata.namespace === defaultConfig.namespace) as unknown as { spec: { selector: { matchLabels: Record<string, string> } } }
    const netpol = one(objects, 'NetworkPolicy') as unknown as { spec: { podSelector: { matchLabels: Record<string, string> } } }
    const sm = one(objects, 'ServiceMonitor') as unknown as { metadata: Obj['metadata']; spec: { selector: { matchLabels: Record<string, string> }; namespaceSelector: { matchNames: string[] }; endpoints: Array<{ port: string; path: string }> } }
    for (const d of ds) {
      const podLabels = d.spec.template.metadata.labels
      expect(matches(d.spec.selector.matchLabels, podLabels)).toBe(true)
      expect(matches(svc.spec.selector, podLabels)).toBe(true)
      expect(matches(pdb.spec.selector.matchLabels, podLabels)).toBe(true)
      expect(matches(netpol.spec.podSelector.matchLabels, podLabels)).toBe(true)
      for (const t of d.spec.template.spec.topologySpreadConstraints) expect(matches(t.labelSelector.matchLabels, podLabels)).toBe(true)
      const portNames = d.spec.template.spec.containers[0]!.ports.map((p) => p.name)
      expect(portNames).toContain(svc.spec.ports[0]!.targetPort)
    }
    expect(matches(sm.spec.selector.matchLabels, svc.metadata.labels ?? {})).toBe(true)
    expect(sm.spec.namespaceSelector.matchNames).toEqual([svc.metadata.namespace])
    expect(svc.spec.ports.map((p) => p.name)).toContain(sm.spec.endpoints[0]!.port)
    expect(sm.spec.endpoints[0]!.path).toBe('/metrics')
    // Prometheus scrapes the metrics port, not the http port the tunnel maps.
    expect(sm.spec.endpoints[0]!.port).toBe(METRICS_PORT_NAME)
  })

  it('the NetworkPolicy admits the tunnel to the http port only and Prometheus to the metrics port only', async () => {
    const objects = await committed()
    const policy = one(objects, 'NetworkPolicy') as unknown as { spec: { ingress: Array<{ from: Array<{ namespaceSelector: { matchLabels: Record<string, string> } }>; ports: Array<{ port: string }> }> } }
    const portsFrom = (ns: string) => policy.spec.ingress.filter((r) => r.from.some((p) => p.namespaceSelector.matchLabels['kubernetes.io/metadata.name'] === ns)).flatMap((r) => r.ports.map((p) => p.port))
    expect(portsFrom(defaultConfig.ingressNamespace)).toEqual(['http'])
    expect(portsFrom(defaultConfig.prometheusNamespace)).toEqual([METRICS_PORT_NAME])
  })

  it('ports, probe paths and the grace period follow the settings schema', async () => {
    for (const d of deployments(await committed())) {
      const pod = d.spec.template.spec
      const server = pod.containers[0]!
      const env = Object.fromEntries(server.env.map((e) => [e.name, e.value]))
      expect(server.ports).toEqual([expect.objectContaining({ name: 'http', containerPort: defaults.PORT }), expect.objectContaining({ name: METRICS_PORT_NAME, containerPort: METRICS_PORT })])
      expect(env).toMatchObject({ PORT: String(defaults.PORT), METRICS_PORT: String(METRICS_PORT), HOST: '0.0.0.0', MODEL_REPOSITORY: '/models', SHUTDOWN_GRACE_MS: String(defaults.SHUTDOWN_GRACE_MS) })
      expect(settingsSchema.safeParse({ ...env, INFER_TOKEN: 'x'.repeat(16) }).success).toBe(true)
      expect(server.startupProbe.httpGet).toEqual({ path: READY_PATH, port: 'http' })
      expect(server.readinessProbe.httpGet).toEqual({ path: READY_PATH, port: 'http' })
      expect(server.livenessProbe.httpGet).toEqual({ path: LIVE_PATH, port: 'http' })
      const sleep = server.lifecycle.preStop.sleep.seconds
      expect(sleep).toBeGreaterThan(0)
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(sleep + defaults.SHUTDOWN_GRACE_MS / 1000)
      expect(pod.terminationGracePeriodSeconds).toBe(terminationGraceSeconds(defaultConfig))
      const init = Object.fromEntries(pod.initContainers[0]!.env.map((e) => [e.name, e.value]))
      const gpu = d.metadata.labels?.['edge-infer/variant'] === 'gpu'
      // The bucket's region (else us-east-1 and a redirect); the GPU pod's fetch sees no GPU.
      expect(init).toEqual({
        MODEL_SOURCE: expect.stringMatching(/^s3:\/\/.+\/.+/), MODEL_REPOSITORY: '/models', AWS_REGION: defaultConfig.modelSourceRegion,
        ...(gpu ? { NVIDIA_VISIBLE_DEVICES: 'void' } : {}),
      })
      expect(readFetchSettings(init).AWS_REGION).toBe(defaultConfig.modelSourceRegion)
      for (const sc of [server.securityContext, pod.initContainers[0]!.securityContext]) {
        expect(sc).toMatchObject({ runAsNonRoot: true, runAsUser: expect.any(Number), readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } })
        expect(sc.runAsUser).toBeGreaterThan(0)
      }
    }
  })

  it('fetches with workload identity by default: IRSA role on the ServiceAccount, for the init container only, no key Secret', async () => {
    const objects = await committed()
    const sa = one(objects, 'ServiceAccount') as unknown as Obj & { metadata: { annotations?: Record<string, string> }; automountServiceAccountToken: boolean }
    expect(sa.metadata.annotations).toEqual({ [IRSA_ROLE_ANNOTATION]: defaultConfig.modelSourceRoleArn })
    expect(sa.automountServiceAccountToken).toBe(false)
    for (const d of deployments(objects)) {
      expect(d.spec.template.metadata.annotations).toEqual({ [IRSA_SKIP_ANNOTATION]: d.spec.template.spec.containers[0]!.name })
      expect(d.spec.template.spec.initContainers[0]!.envFrom).toBeUndefined()
    }
    // A store without workload identity: the static key Secret, and no IRSA annotations.
    const keyed = Object.values(manifests({ ...defaultConfig, modelSourceRoleArn: undefined, modelSourceSecret: 'model-keys' })).flat().map((m) => m.toJSON()) as unknown as Obj[]
    expect((one(keyed, 'ServiceAccount') as unknown as { metadata: { annotations?: unknown } }).metadata.annotations).toBeUndefined()
    for (const d of deployments(keyed)) {
      expect(d.spec.template.metadata.annotations).toBeUndefined()
      expect(d.spec.template.spec.initContainers[0]!.envFrom).toEqual([{ secretRef: { name: 'model-keys' } }])
    }
  })

  it('leaves tracing off by default (no collector in kube-prometheus-stack)', async () => {
    expect(defaultConfig.otlpEndpoint).toBeUndefined()
    for (const d of deployments(await committed())) {
      const env = d.spec.template.spec.containers[0]!.env
      expect(env.map((e) => e.name).filter((n) => n.startsWith('OTEL_'))).toEqual([])
      expect(tracingWanted(Object.fromEntries(env.map((e) => [e.name, e.value])))).toBe(false)
    }
  })

  it('turns the backend\'s tracing on with a ratio sampler where the operator names a collector, and every $(VAR) reference names a variable defined before it', () => {
    const otlpEndpoint = 'http://opentelemetry-collector.monitoring.svc:4318'
    const traced = Object.values(manifests({ ...defaultConfig, otlpEndpoint })).flat().map((m) => m.toJSON()) as unknown as Obj[]
    for (const d of deployments(traced)) {
      const env = d.spec.template.spec.containers[0]!.env
      const values = Object.fromEntries(env.map((e) => [e.name, e.value]))
      expect(tracingWanted(values)).toBe(true)
      expect(values).toMatchObject({ OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: String(defaultConfig.traceSampleRatio) })
      // The kubelet expands $(NAME) only for variables listed earlier in the same container.
      env.forEach((e, i) => {
        for (const [, ref] of (e.value ?? '').matchAll(/\$\(([A-Z_]+)\)/g)) expect(env.slice(0, i).map((x) => x.name), `${e.name} refers to ${ref}`).toContain(ref)
      })
    }
  })

  it('only the GPU Deployment asks for a GPU and lands on the GPU pool', async () => {
    const ds = deployments(await committed())
    const byVariant = Object.fromEntries(ds.map((d) => [d.metadata.labels?.['edge-infer/variant'], d.spec.template.spec]))
    const g = byVariant.gpu!
    const c = byVariant.cpu!
    expect(g.containers[0]!.resources.limits['nvidia.com/gpu']).toBe('1')
    expect(g.containers[0]!.resources.requests['nvidia.com/gpu']).toBe('1')
    expect(g.nodeSelector).toEqual(defaultConfig.gpuNodeSelector)
    expect(g.tolerations).toEqual([expect.objectContaining({ key: defaultConfig.gpuTaintKey, effect: 'NoSchedule' })])
    expect(c.containers[0]!.resources.limits['nvidia.com/gpu']).toBeUndefined()
    expect(c.nodeSelector).toBeUndefined()
    for (const pod of [g, c]) expect(pod.containers[0]!.resources.requests.memory).toBe(pod.containers[0]!.resources.limits.memory)
  })

  it('KEDA and the HPA scale the Deployment on the summed queue-depth gauge with the per-replica target', async () => {
    const objects = await committed()
    const name = deployments(objects)[0]!.metadata.name
    const so = one(objects, 'ScaledObject') as unknown as {
      spec: {
        scaleTargetRef: { kind: string; name: string }; minReplicaCount: number; fallback: { replicas: number }
        advanced: { horizontalPodAutoscalerConfig: { behavior: { scaleUp: { stabilizationWindowSeconds: number }; scaleDown: { stabilizationWindowSeconds: number } } } }
        triggers: Array<{ type: string; metadata: { query: string; threshold: string } }>
      }
    }
    expect(so.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name })
    expect(so.spec.minReplicaCount).toBeGreaterThanOrEqual(1)
    expect(so.spec.fallback.replicas).toBeGreaterThanOrEqual(so.spec.minReplicaCount)
    expect(so.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleUp.stabilizationWindowSeconds).toBe(0)
    expect(so.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds).toBe(300)
    const [trigger] = so.spec.triggers
    expect(trigger).toMatchObject({ type: 'prometheus', metadata: { query: queueDepthQuery(defaultConfig), threshold: String(TARGET_ROWS_PER_REPLICA) } })
    expect(trigger!.metadata.query).toMatch(new RegExp(`^sum\\(${QUEUE_DEPTH_METRIC}\\{`))
    expect(TARGET_ROWS_PER_REPLICA).toBeGreaterThan(0)
    const hpa = one(objects, 'HorizontalPodAutoscaler') as unknown as { spec: { scaleTargetRef: { name: string }; metrics: Array<{ pods: { metric: { name: string }; target: { averageValue: string } } }> } }
    expect(hpa.spec.scaleTargetRef.name).toBe(name)
    expect(hpa.spec.metrics[0]!.pods).toEqual({ metric: { name: QUEUE_DEPTH_METRIC }, target: { type: 'AverageValue', averageValue: String(TARGET_ROWS_PER_REPLICA) } })
  })

  it('the tunnel runs in the namespace the backend NetworkPolicy admits, and points at the backend Service', async () => {
    const objects = await committed()
    const tunnel = one(objects, 'Deployment', (o) => o.metadata.name === 'cloudflared') as unknown as Obj & { spec: { template: { spec: PodSpecView & { containers: Array<{ image: string; args: string[]; env: Array<{ name: string }> }> } } } }
    const policy = one(objects, 'NetworkPolicy') as unknown as { spec: { ingress: Array<{ from: Array<{ namespaceSelector?: { matchLabels: Record<string, string> } }> }> } }
    const admitted = policy.spec.ingress.flatMap((rule) => rule.from).map((peer) => peer.namespaceSelector?.matchLabels['kubernetes.io/metadata.name'])
    expect(admitted).toContain(tunnel.metadata.namespace)
    one(objects, 'Namespace', (o) => o.metadata.name === tunnel.metadata.namespace)
    const [container] = tunnel.spec.template.spec.containers
    expect(container!.image).toMatch(/^cloudflare\/cloudflared:\d{4}\.\d+\.\d+$/)
    expect(container!.image).not.toBe('cloudflare/cloudflared:2025.8.1')
    const pdb = one(objects, 'PodDisruptionBudget', (o) => o.metadata.namespace === tunnel.metadata.namespace) as unknown as { spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } } }
    const tunnelPods = (tunnel as unknown as DeploymentView).spec.template.metadata.labels
    expect(matches(pdb.spec.selector.matchLabels, tunnelPods)).toBe(true)
    expect(pdb.spec.maxUnavailable).toBeLessThan((tunnel as unknown as { spec: { replicas: number } }).spec.replicas)
    expect(container!.args).toContain('--no-autoupdate')
    expect(container!.env.map((e) => e.name)).toEqual(['TUNNEL_TOKEN'])
    const svc = one(objects, 'Service') as unknown as Obj & { spec: { ports: Array<{ port: number }> } }
    expect(tunnelOrigin(defaultConfig)).toBe(`http://${svc.metadata.name}.${svc.metadata.namespace}.svc.cluster.local:${svc.spec.ports[0]!.port}`)
  })
})

describe('the edge scrape (committed YAML)', () => {
  it('a ScrapeConfig the ServiceMonitor\'s Prometheus selects scrapes the Worker\'s /metrics with the admin key from a Secret', async () => {
    const objects = await committed()
    const sc = one(objects, 'ScrapeConfig') as unknown as Obj & { spec: { jobName: string; scheme: string; metricsPath: string; authorization: { type: string; credentials: { name: string; key: string } }; staticConfigs: Array<{ targets: string[] }> } }
    expect(sc.metadata.labels).toMatchObject(defaultConfig.serviceMonitorLabels)
    expect(sc.spec).toMatchObject({ jobName: EDGE_JOB, scheme: 'HTTPS', metricsPath: '/metrics' })
    expect(sc.spec.authorization).toEqual({ type: 'Bearer', credentials: { name: EDGE_SCRAPE_SECRET, key: 'key' } })
    expect(sc.spec.staticConfigs).toEqual([{ targets: [defaultConfig.edgeHost] }])
  })
})
