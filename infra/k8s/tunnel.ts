import { Deployment } from 'kubernetes-models/apps/v1/Deployment'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget'
import { Namespace } from 'kubernetes-models/v1/Namespace'
import { BACKEND_PORT, type ClusterConfig } from './config.ts'

/** cloudflared's own metrics and readiness listener (`--metrics`). */
const TUNNEL_METRICS_PORT = 2000
/**
 * Pinned: a tunnel client that updates itself under a Deployment would drift from what was reviewed.
 * The newest release tag known here (no registry access to list tags; docs/deploy.md says how to bump).
 */
export const CLOUDFLARED_IMAGE = 'cloudflare/cloudflared:2026.7.1'
/** Secret holding the tunnel token (`cloudflared tunnel token <name>`), key `token`. */
export const TUNNEL_TOKEN_SECRET = 'cloudflared-tunnel-token'

/**
 * The Worker's way in: a remotely managed Cloudflare Tunnel whose public hostname (the
 * production `BACKEND_URL`) routes to the backend Service. cloudflared dials out to Cloudflare, so
 * the cluster opens no inbound port; the backend's NetworkPolicy admits this namespace only.
 */
export const tunnelNamespace = (c: ClusterConfig) =>
  new Namespace({ metadata: { name: c.ingressNamespace, labels: { 'app.kubernetes.io/part-of': 'edge-infer' } } })

/** Where the tunnel's public hostname must point (set in the tunnel's configuration). */
export const tunnelOrigin = (c: ClusterConfig): string => `http://${c.name}.${c.namespace}.svc.cluster.local:${BACKEND_PORT}`

const tunnelLabels = { 'app.kubernetes.io/name': 'cloudflared', 'app.kubernetes.io/part-of': 'edge-infer' }

/** A drain or upgrade takes one connector at a time: the other keeps the tunnel up. */
export const tunnelPodDisruptionBudget = (c: ClusterConfig) =>
  new PodDisruptionBudget({
    metadata: { name: 'cloudflared', namespace: c.ingressNamespace, labels: tunnelLabels },
    spec: { maxUnavailable: 1, selector: { matchLabels: tunnelLabels }, unhealthyPodEvictionPolicy: 'AlwaysAllow' },
  })

export const tunnelDeployment = (c: ClusterConfig) => {
  const labels = tunnelLabels
  return new Deployment({
    metadata: { name: 'cloudflared', namespace: c.ingressNamespace, labels },
    spec: {
      // Two connectors: a tunnel survives one pod's restart or node drain.
      replicas: 2,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } },
          topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: labels } }],
          containers: [{
            name: 'cloudflared',
            image: CLOUDFLARED_IMAGE,
            args: ['tunnel', '--no-autoupdate', '--metrics', `0.0.0.0:${TUNNEL_METRICS_PORT}`, 'run'],
            env: [{ name: 'TUNNEL_TOKEN', valueFrom: { secretKeyRef: { name: TUNNEL_TOKEN_SECRET, key: 'token' } } }],
            ports: [{ name: 'metrics', containerPort: TUNNEL_METRICS_PORT }],
            // /ready answers 200 once the connector holds a connection to Cloudflare's edge.
            readinessProbe: { httpGet: { path: '/ready', port: TUNNEL_METRICS_PORT }, periodSeconds: 10 },
            livenessProbe: { httpGet: { path: '/ready', port: TUNNEL_METRICS_PORT }, initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 3 },
            resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } },
            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
          }],
        },
      },
    },
  })
}
