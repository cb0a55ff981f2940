import { Deployment } from 'kubernetes-models/apps/v1/Deployment'
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget'
import type { IContainer } from 'kubernetes-models/v1/Container'
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar'
import { Namespace } from 'kubernetes-models/v1/Namespace'
import type { IProbe } from 'kubernetes-models/v1/Probe'
import type { ISecurityContext } from 'kubernetes-models/v1/SecurityContext'
import { Service } from 'kubernetes-models/v1/Service'
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount'
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor'
import {
  BACKEND_PORT, LIVE_PATH, METRICS_PATH, METRICS_PORT, METRICS_PORT_NAME, MODEL_MOUNT, PORT_NAME, READY_PATH, RUN_AS_USER, SHUTDOWN_GRACE_MS, type ClusterConfig,
} from './config.ts'
import { MODEL_BUDGET_MI, memoryMi } from './sizing.ts'

export type Variant = 'gpu' | 'cpu'

/** The selector: stable across versions and variants (a Deployment's selector cannot change). */
export const selectorLabels = (c: ClusterConfig): Record<string, string> => ({
  'app.kubernetes.io/name': c.name,
  'app.kubernetes.io/component': 'inference',
})

const labels = (c: ClusterConfig): Record<string, string> => ({
  ...selectorLabels(c),
  'app.kubernetes.io/part-of': 'edge-infer',
  'app.kubernetes.io/version': c.version,
})

const meta = (c: ClusterConfig, name = c.name) => ({ name, namespace: c.namespace, labels: labels(c) })

export const namespace = (c: ClusterConfig) => new Namespace({ metadata: { name: c.namespace, labels: { 'app.kubernetes.io/part-of': 'edge-infer' } } })

/** The ServiceAccount annotation IRSA's webhook reads to give the pod a web-identity token for this role. */
export const IRSA_ROLE_ANNOTATION = 'eks.amazonaws.com/role-arn'
/** Pod annotation: containers IRSA's webhook leaves alone, so only the fetch holds AWS credentials. */
export const IRSA_SKIP_ANNOTATION = 'eks.amazonaws.com/skip-containers'

/**
 * The backend calls no Kubernetes API: no API token in the pod. IRSA's token is a projected volume
 * of its own (audience sts.amazonaws.com) that the webhook adds whatever automount says.
 */
export const serviceAccount = (c: ClusterConfig) =>
  new ServiceAccount({
    metadata: { ...meta(c), ...(c.modelSourceRoleArn === undefined ? {} : { annotations: { [IRSA_ROLE_ANNOTATION]: c.modelSourceRoleArn } }) },
    automountServiceAccountToken: false,
  })

const securityContext: ISecurityContext = {
  runAsNonRoot: true,
  runAsUser: RUN_AS_USER,
  runAsGroup: RUN_AS_USER,
  readOnlyRootFilesystem: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
}

const httpProbe = (path: string, probe: Omit<IProbe, 'httpGet'>): IProbe => ({ httpGet: { path, port: PORT_NAME }, ...probe })

const modelVolumeMount = { name: 'models', mountPath: MODEL_MOUNT }

/** Fetches the repository and checks every MANIFEST before the server may start (infra/container). */
const fetchModels = (c: ClusterConfig, variant: Variant): IContainer => ({
  name: 'fetch-models',
  // The server's image: one pull per node, not two.
  image: `${c.image}:${c.version}-${variant}`,
  command: ['node', 'dist/backend/fetch-models.js'],
  env: [
    { name: 'MODEL_SOURCE', value: c.modelSource },
    { name: 'MODEL_REPOSITORY', value: MODEL_MOUNT },
    { name: 'AWS_REGION', value: c.modelSourceRegion },
    // The fetch needs no GPU: with the NVIDIA runtime, `void` keeps the devices and driver libraries out of it.
    ...(variant === 'gpu' ? [{ name: 'NVIDIA_VISIBLE_DEVICES', value: 'void' }] : []),
  ],
  ...(c.modelSourceSecret === undefined ? {} : { envFrom: [{ secretRef: { name: c.modelSourceSecret } }] }),
  resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '256Mi' } },
  securityContext,
  volumeMounts: [modelVolumeMount, { name: 'tmp', mountPath: '/tmp' }],
})

/** The standard OTEL_* variables the backend's tracing reads (backend/monitor/tracing), the pod named in the resource. */
const tracingEnv = (c: ClusterConfig): IEnvVar[] =>
  c.otlpEndpoint === undefined
    ? []
    : [
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: c.otlpEndpoint },
        { name: 'OTEL_SERVICE_NAME', value: c.name },
        { name: 'OTEL_RESOURCE_ATTRIBUTES', value: `k8s.pod.name=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE),service.version=${c.version}` },
        { name: 'OTEL_TRACES_SAMPLER', value: 'parentbased_traceidratio' },
        { name: 'OTEL_TRACES_SAMPLER_ARG', value: String(c.traceSampleRatio) },
      ]

const server = (c: ClusterConfig, variant: Variant): IContainer => {
  const memory = `${memoryMi(variant === 'gpu')}Mi`
  return {
    name: 'backend',
    image: `${c.image}:${c.version}-${variant}`,
    ports: [
      { name: PORT_NAME, containerPort: BACKEND_PORT, protocol: 'TCP' },
      { name: METRICS_PORT_NAME, containerPort: METRICS_PORT, protocol: 'TCP' },
    ],
    env: [
      { name: 'HOST', value: '0.0.0.0' },
      { name: 'PORT', value: String(BACKEND_PORT) },
      { name: 'METRICS_PORT', value: String(METRICS_PORT) },
      { name: 'MODEL_REPOSITORY', value: MODEL_MOUNT },
      { name: 'MODEL_MEMORY_BUDGET_MB', value: String(MODEL_BUDGET_MI) },
      { name: 'SHUTDOWN_GRACE_MS', value: String(SHUTDOWN_GRACE_MS) },
      // The pod name in the health answers tells which replica answered.
      { name: 'INSTANCE_ID', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'INFER_TOKEN', valueFrom: { secretKeyRef: { name: `${c.name}-tokens`, key: 'INFER_TOKEN' } } },
      { name: 'ADMIN_TOKEN', valueFrom: { secretKeyRef: { name: `${c.name}-tokens`, key: 'ADMIN_TOKEN', optional: true } } },
      ...tracingEnv(c),
    ],
    // One core: the backend's CPU per request at its measured peak rate is about one core (the JSON
    // work is on the CPU with or without a GPU). Not limited: a throttled batcher adds latency and saves nothing.
    resources: {
      requests: { cpu: '1', memory, ...(variant === 'gpu' ? { 'nvidia.com/gpu': '1' } : {}) },
      limits: { memory, ...(variant === 'gpu' ? { 'nvidia.com/gpu': '1' } : {}) },
    },
    // Ready only once pinned models are warm; the startup probe gives warm-up up to 5 minutes before liveness counts.
    startupProbe: httpProbe(READY_PATH, { periodSeconds: 5, failureThreshold: 60, timeoutSeconds: 2 }),
    readinessProbe: httpProbe(READY_PATH, { periodSeconds: 5, failureThreshold: 2, timeoutSeconds: 2 }),
    livenessProbe: httpProbe(LIVE_PATH, { periodSeconds: 10, failureThreshold: 3, timeoutSeconds: 2 }),
    // No shell in the image: the kubelet's own sleep keeps serving while endpoints drop the pod.
    lifecycle: { preStop: { sleep: { seconds: c.preStopSleepSeconds } } },
    securityContext,
    volumeMounts: [{ ...modelVolumeMount, readOnly: true }, { name: 'tmp', mountPath: '/tmp' }],
  }
}

/** preStop sleep, then SIGTERM and the server's drain, plus 5 s before SIGKILL. */
export const terminationGraceSeconds = (c: ClusterConfig): number => c.preStopSleepSeconds + Math.ceil(SHUTDOWN_GRACE_MS / 1000) + 5

export const deployment = (c: ClusterConfig, variant: Variant) => {
  const spread = (topologyKey: string) => ({
    maxSkew: 1,
    topologyKey,
    // GPUs are scarce: a skewed schedule beats a pending pod.
    whenUnsatisfiable: 'ScheduleAnyway' as const,
    labelSelector: { matchLabels: selectorLabels(c) },
    matchLabelKeys: ['pod-template-hash'],
  })
  return new Deployment({
    metadata: { ...meta(c), labels: { ...labels(c), 'edge-infer/variant': variant } },
    spec: {
      // No replicas: the autoscaler owns the count, and a re-apply would reset it.
      revisionHistoryLimit: 5,
      selector: { matchLabels: selectorLabels(c) },
      // A new pod must be warm before an old one goes: capacity never dips during a rollout.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: {
          labels: { ...labels(c), 'edge-infer/variant': variant },
          ...(c.modelSourceRoleArn === undefined ? {} : { annotations: { [IRSA_SKIP_ANNOTATION]: 'backend' } }),
        },
        spec: {
          serviceAccountName: c.name,
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: terminationGraceSeconds(c),
          securityContext: { runAsNonRoot: true, runAsUser: RUN_AS_USER, fsGroup: RUN_AS_USER, seccompProfile: { type: 'RuntimeDefault' } },
          ...(variant === 'gpu'
            ? { nodeSelector: c.gpuNodeSelector, tolerations: [{ key: c.gpuTaintKey, operator: 'Exists' as const, effect: 'NoSchedule' as const }] }
            : {}),
          topologySpreadConstraints: [spread('topology.kubernetes.io/zone'), spread('kubernetes.io/hostname')],
          initContainers: [fetchModels(c, variant)],
          containers: [server(c, variant)],
          volumes: [
            { name: 'models', emptyDir: { sizeLimit: '2Gi' } },
            { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
          ],
        },
      },
    },
  })
}

export const service = (c: ClusterConfig) =>
  new Service({
    metadata: meta(c),
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(c),
      // The tunnel's origin is the http port; the metrics port is for the ServiceMonitor.
      ports: [
        { name: PORT_NAME, port: BACKEND_PORT, targetPort: PORT_NAME, protocol: 'TCP' },
        { name: METRICS_PORT_NAME, port: METRICS_PORT, targetPort: METRICS_PORT_NAME, protocol: 'TCP' },
      ],
    },
  })

/** One pod may go at a time (node drains, upgrades); the rest keep serving. */
export const podDisruptionBudget = (c: ClusterConfig) =>
  new PodDisruptionBudget({
    metadata: meta(c),
    spec: { maxUnavailable: 1, selector: { matchLabels: selectorLabels(c) }, unhealthyPodEvictionPolicy: 'AlwaysAllow' },
  })

/**
 * The ingress or tunnel (the edge's way in) reaches the http port only, Prometheus the metrics port
 * only. Egress stays open for the model fetch (docs/deploy.md lists what it needs where egress is denied).
 */
export const networkPolicy = (c: ClusterConfig) =>
  new NetworkPolicy({
    metadata: meta(c),
    spec: {
      podSelector: { matchLabels: selectorLabels(c) },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': c.ingressNamespace } } }],
          ports: [{ port: PORT_NAME, protocol: 'TCP' }],
        },
        {
          from: [{
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': c.prometheusNamespace } },
            podSelector: { matchLabels: c.prometheusPodLabels },
          }],
          ports: [{ port: METRICS_PORT_NAME, protocol: 'TCP' }],
        },
      ],
    },
  })

export const serviceMonitor = (c: ClusterConfig) =>
  new ServiceMonitor({
    metadata: { ...meta(c), labels: { ...labels(c), ...c.serviceMonitorLabels } },
    spec: {
      selector: { matchLabels: selectorLabels(c) },
      namespaceSelector: { matchNames: [c.namespace] },
      // 10 s keeps the autoscaler's signal fresh without a scrape per KEDA poll.
      endpoints: [{ port: METRICS_PORT_NAME, path: METRICS_PATH, interval: '10s', scrapeTimeout: '5s' }],
      // The variant on every series, so an alert can tell a GPU pod serving on the CPU provider.
      podTargetLabels: ['edge-infer/variant'],
    },
  })
