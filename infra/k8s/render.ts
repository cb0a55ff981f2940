import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Model } from '@kubernetes-models/base'
import { stringify } from 'yaml'
import { prometheusRule } from '../observability/prometheus-rule.ts'
import { horizontalPodAutoscaler, scaledObject } from './autoscaling.ts'
import { deployment, namespace, networkPolicy, podDisruptionBudget, service, serviceAccount, serviceMonitor } from './backend.ts'
import { defaultConfig, type ClusterConfig } from './config.ts'
import { edgeScrapeConfig } from './edge-scrape.ts'
import { tunnelDeployment, tunnelNamespace, tunnelPodDisruptionBudget } from './tunnel.ts'

export const RENDERED_DIR = fileURLToPath(new URL('./rendered/', import.meta.url))

/**
 * One file per thing to apply: base.yaml always, one of the deployments, one of the autoscalers
 * (KEDA and a plain HPA on the same Deployment would fight over its replica count), and
 * tunnel.yaml where the Worker reaches the backend through a Cloudflare Tunnel, and
 * prometheus-rules.yaml and edge-scrape.yaml (the Worker's /metrics) where prometheus-operator runs
 * the Prometheus (infra/observability).
 */
export const manifests = (c: ClusterConfig = defaultConfig): Record<string, Array<Model<unknown>>> => ({
  'base.yaml': [namespace(c), serviceAccount(c), service(c), podDisruptionBudget(c), networkPolicy(c), serviceMonitor(c)],
  'deployment-gpu.yaml': [deployment(c, 'gpu')],
  'deployment-cpu.yaml': [deployment(c, 'cpu')],
  'autoscaling-keda.yaml': [scaledObject(c)],
  'autoscaling-hpa.yaml': [horizontalPodAutoscaler(c)],
  'tunnel.yaml': [tunnelNamespace(c), tunnelDeployment(c), tunnelPodDisruptionBudget(c)],
  'prometheus-rules.yaml': [prometheusRule(c)],
  'edge-scrape.yaml': [edgeScrapeConfig(c)],
})

const HEADER = '# Rendered by `npm run infra:render` from infra/k8s/*.ts: edit those, not this file.\n'

/** Plain data in insertion order (the builders' order), so the text only moves when the code does. */
export const toYaml = (objects: Array<Model<unknown>>): string =>
  HEADER + objects.map((o) => stringify(JSON.parse(JSON.stringify(o)) as unknown, { lineWidth: 0 })).join('---\n')

export const render = (c: ClusterConfig = defaultConfig): Record<string, string> =>
  Object.fromEntries(Object.entries(manifests(c)).map(([file, objects]) => [file, toYaml(objects)]))

const write = async (): Promise<void> => {
  const files = render()
  await mkdir(RENDERED_DIR, { recursive: true })
  // A file no longer rendered must not linger and be applied.
  for (const stale of (await readdir(RENDERED_DIR)).filter((f) => f.endsWith('.yaml') && !(f in files))) await rm(join(RENDERED_DIR, stale))
  for (const [file, text] of Object.entries(files)) await writeFile(join(RENDERED_DIR, file), text)
  process.stdout.write(`wrote ${Object.keys(files).map((f) => `infra/k8s/rendered/${f}`).join(', ')}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await write()
