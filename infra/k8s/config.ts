import { readFileSync } from 'node:fs'
import { settingsSchema } from '../../backend/settings.ts'
import { BACKEND_METRICS } from '../../shared/backend-metrics.ts'

/** Names a cluster may need to change, in one place (the tests check everything derived from them). */
export interface ClusterConfig {
  namespace: string
  name: string
  image: string
  version: string
  /** s3://bucket/prefix the init container fetches the model repository from. */
  modelSource: string
  /** Secret with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and S3_ENDPOINT, AWS_REGION for R2 or MinIO) for the fetch (backend/repository/fetch.ts). */
  modelSourceSecret: string
  gpuNodeSelector: Record<string, string>
  gpuTaintKey: string
  /** Namespace of the ingress controller or cloudflared tunnel that forwards the edge's calls. */
  ingressNamespace: string
  /** Namespace and pod labels of the Prometheus that scrapes /metrics. */
  prometheusNamespace: string
  prometheusPodLabels: Record<string, string>
  /** Label the prometheus-operator's Prometheus selects ServiceMonitors by. */
  serviceMonitorLabels: Record<string, string>
  /** In-cluster Prometheus address KEDA queries. */
  prometheusUrl: string
  minReplicas: number
  maxReplicas: number
  /** Replicas KEDA holds while Prometheus cannot be read. */
  fallbackReplicas: number
  /** Seconds the pod keeps serving after deletion so endpoints and load balancers drop it first. */
  preStopSleepSeconds: number
  /** OTLP/HTTP collector the backend exports traces to (OTEL_EXPORTER_OTLP_ENDPOINT); undefined: tracing off. */
  otlpEndpoint: string | undefined
  /** Share of traces the backend starts itself that it samples; a caller's sampled flag is followed either way. */
  traceSampleRatio: number
}

const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version

export const defaultConfig: ClusterConfig = {
  namespace: 'edge-infer',
  name: 'edge-infer-backend',
  image: 'ghcr.io/edge-infer/backend',
  version: packageVersion,
  modelSource: 's3://edge-infer-models/repository',
  modelSourceSecret: 'edge-infer-model-source',
  gpuNodeSelector: { 'nvidia.com/gpu.present': 'true' },
  gpuTaintKey: 'nvidia.com/gpu',
  ingressNamespace: 'cloudflared',
  prometheusNamespace: 'monitoring',
  prometheusPodLabels: { 'app.kubernetes.io/name': 'prometheus' },
  serviceMonitorLabels: { release: 'kube-prometheus-stack' },
  prometheusUrl: 'http://kube-prometheus-stack-prometheus.monitoring.svc:9090',
  minReplicas: 2,
  maxReplicas: 10,
  fallbackReplicas: 4,
  preStopSleepSeconds: 10,
  // The OpenTelemetry Collector Helm chart's Service (open-telemetry/opentelemetry-collector) in the monitoring namespace.
  otlpEndpoint: 'http://opentelemetry-collector.monitoring.svc:4318',
  traceSampleRatio: 0.1,
}

/** The backend's own defaults, so a port or grace change in the code reaches the manifests. */
const defaults = settingsSchema.parse({})
export const BACKEND_PORT = defaults.PORT
export const SHUTDOWN_GRACE_MS = defaults.SHUTDOWN_GRACE_MS
/** Not in the settings schema: the OIP health routes (backend/routes/health.ts); a test asks a running backend. */
export const READY_PATH = '/v2/health/ready'
export const LIVE_PATH = '/v2/health/live'
export const METRICS_PATH = '/metrics'
export const PORT_NAME = 'http'
/** The gauge KEDA sums: rows waiting plus running per model version (backend/monitor/metrics.ts). */
export const QUEUE_DEPTH_METRIC = BACKEND_METRICS.queueDepth
/** Model repository volume, written by the init container, read by the server. */
export const MODEL_MOUNT = '/models'
/** Numeric so runAsNonRoot can be checked by the kubelet without reading /etc/passwd. */
export const RUN_AS_USER = 10001
