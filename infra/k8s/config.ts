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
  /**
   * The bucket's region, as AWS_REGION of the fetch: the SDK signs for it (a wrong one costs a
   * redirect, followed; none at all used to mean us-east-1 and a 301 for any other bucket).
   */
  modelSourceRegion: string
  /**
   * IAM role the fetch assumes through IRSA (`eks.amazonaws.com/role-arn` on the ServiceAccount):
   * short-lived credentials, no key to leak or rotate. Undefined: no annotation (EKS Pod Identity,
   * whose association names the ServiceAccount, or the static key Secret below).
   */
  modelSourceRoleArn: string | undefined
  /** Optional Secret with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and S3_ENDPOINT for R2 or MinIO), for stores without workload identity. */
  modelSourceSecret: string | undefined
  gpuNodeSelector: Record<string, string>
  gpuTaintKey: string
  /** Namespace of the ingress controller or cloudflared tunnel that forwards the edge's calls. */
  ingressNamespace: string
  /** Namespace and pod labels of the Prometheus that scrapes /metrics. */
  prometheusNamespace: string
  prometheusPodLabels: Record<string, string>
  /**
   * Host of the deployed Worker whose `/metrics` Prometheus scrapes (admin scope), e.g.
   * `edge-infer-production.<account>.workers.dev` or the Worker's custom domain.
   */
  edgeHost: string
  /** Label the prometheus-operator's Prometheus selects ServiceMonitors (and ScrapeConfigs) by. */
  serviceMonitorLabels: Record<string, string>
  /** In-cluster Prometheus address KEDA queries. */
  prometheusUrl: string
  minReplicas: number
  maxReplicas: number
  /** Replicas KEDA holds while Prometheus cannot be read. */
  fallbackReplicas: number
  /** Seconds the pod keeps serving after deletion so endpoints and load balancers drop it first. */
  preStopSleepSeconds: number
  /**
   * OTLP/HTTP collector the backend exports traces to (OTEL_EXPORTER_OTLP_ENDPOINT); undefined:
   * tracing off. kube-prometheus-stack installs no collector, so the operator names one.
   */
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
  modelSourceRegion: 'us-east-1',
  // AWS's documentation account: the operator sets the role made for the bucket (docs/deploy.md).
  modelSourceRoleArn: 'arn:aws:iam::111122223333:role/edge-infer-model-reader',
  modelSourceSecret: undefined,
  gpuNodeSelector: { 'nvidia.com/gpu.present': 'true' },
  gpuTaintKey: 'nvidia.com/gpu',
  ingressNamespace: 'cloudflared',
  prometheusNamespace: 'monitoring',
  prometheusPodLabels: { 'app.kubernetes.io/name': 'prometheus' },
  edgeHost: 'edge-infer-production.example.workers.dev',
  serviceMonitorLabels: { release: 'kube-prometheus-stack' },
  prometheusUrl: 'http://kube-prometheus-stack-prometheus.monitoring.svc:9090',
  minReplicas: 2,
  maxReplicas: 10,
  fallbackReplicas: 4,
  preStopSleepSeconds: 10,
  otlpEndpoint: undefined,
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
/**
 * `/metrics` on its own port (the backend's METRICS_PORT): the ServiceMonitor and the NetworkPolicy's
 * Prometheus rule use it, the tunnel (which maps the http port) does not reach it.
 */
export const METRICS_PORT = 9464
export const METRICS_PORT_NAME = 'metrics'
/** The gauge KEDA sums: rows waiting plus running per model version (backend/monitor/metrics.ts). */
export const QUEUE_DEPTH_METRIC = BACKEND_METRICS.queueDepth
/** Model repository volume, written by the init container, read by the server. */
export const MODEL_MOUNT = '/models'
/** Numeric so runAsNonRoot can be checked by the kubelet without reading /etc/passwd. */
export const RUN_AS_USER = 10001
