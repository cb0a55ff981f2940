import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule'
import type { ClusterConfig } from '../k8s/config.ts'
import { ruleGroups } from './rules.ts'

/**
 * The rule file as a prometheus-operator object, beside the ServiceMonitor: the same labels, so
 * the Prometheus that selects the ServiceMonitor (kube-prometheus-stack's `release`) loads it.
 */
export const prometheusRule = (c: ClusterConfig) =>
  new PrometheusRule({
    metadata: {
      name: c.name,
      namespace: c.namespace,
      labels: { 'app.kubernetes.io/name': c.name, 'app.kubernetes.io/part-of': 'edge-infer', ...c.serviceMonitorLabels },
    },
    spec: { groups: ruleGroups() },
  })
