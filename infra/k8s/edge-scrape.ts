import { ScrapeConfig } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1alpha1/ScrapeConfig'
import { METRICS_PATH, type ClusterConfig } from './config.ts'

/** The edge's job label: the rules and dashboard read the Worker's series under it. */
export const EDGE_JOB = 'edge-infer-edge'
/** Secret (in the backend's namespace) holding an admin-scope API key, key `key`: `npm run keys:create`. */
export const EDGE_SCRAPE_SECRET = 'edge-infer-edge-scrape'

/**
 * The Worker's `/metrics`, scraped by the same Prometheus as the backend: without it the SLO burn,
 * edge 429, fallback and canary-rollback alerts have no data. A ScrapeConfig, not an
 * additionalScrapeConfigs Secret: it is a typed, validated object selected by the same labels as the
 * ServiceMonitor, and prometheus-operator reads the admin key from the Secret itself, so the key is
 * in no object but that Secret and the operator-generated config.
 */
export const edgeScrapeConfig = (c: ClusterConfig) =>
  new ScrapeConfig({
    metadata: {
      name: EDGE_JOB,
      namespace: c.namespace,
      labels: { 'app.kubernetes.io/name': EDGE_JOB, 'app.kubernetes.io/part-of': 'edge-infer', ...c.serviceMonitorLabels },
    },
    spec: {
      jobName: EDGE_JOB,
      scheme: 'HTTPS',
      metricsPath: METRICS_PATH,
      // Every isolate answers with the sums kept in Upstash: one target, and each scrape reads Redis.
      scrapeInterval: '30s',
      scrapeTimeout: '10s',
      authorization: { type: 'Bearer', credentials: { name: EDGE_SCRAPE_SECRET, key: 'key' } },
      staticConfigs: [{ targets: [c.edgeHost] }],
    },
  })
