import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Model } from '@kubernetes-models/base'
import { stringify } from 'yaml'
import { prometheusRule } from '../observability/prometheus-rule.ts'
import { horizontalPodAutoscaler, scaledObject } from './autoscaling.ts'
import { deployment, namespace, networkPolicy, podDisruptionBudget, service, serviceAccount, serviceMonitor } from './backend.ts'
import { defaultConfig, type ClusterConfig } from './config.ts'
import { edgeScrapeConfig } from './edge-scrape.ts'
import { inferenceService, predictorObjects } from './kserve.ts'
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

/**
 * For clusters that run KServe, in a folder of their own (they replace the deployment-* and
 * autoscaling-* files, and their ServiceMonitor, PodDisruptionBudget, NetworkPolicy and ScaledObject
 * are a second set): predictor.yaml and one of the InferenceServices, beside base.yaml.
 */
export const KSERVE_DIR = join(RENDERED_DIR, 'kserve')
export const kserveManifests = (c: ClusterConfig = defaultConfig): Record<string, Array<Model<unknown>>> => ({
  'predictor.yaml': predictorObjects(c),
  'inferenceservice-gpu.yaml': [inferenceService(c, 'gpu')],
  'inferenceservice-cpu.yaml': [inferenceService(c, 'cpu')],
})

const HEADER = '# Rendered by `npm run infra:render` from infra/k8s/*.ts: edit those, not this file.\n'

/** Plain data in insertion order (the builders' order), so the text only moves when the code does. */
export const toYaml = (objects: Array<Model<unknown>>): string =>
  HEADER + objects.map((o) => stringify(JSON.parse(JSON.stringify(o)) as unknown, { lineWidth: 0 })).join('---\n')

const toFiles = (objects: Record<string, Array<Model<unknown>>>): Record<string, string> =>
  Object.fromEntries(Object.entries(objects).map(([file, list]) => [file, toYaml(list)]))

export const render = (c: ClusterConfig = defaultConfig): Record<string, string> => toFiles(manifests(c))
export const renderKserve = (c: ClusterConfig = defaultConfig): Record<string, string> => toFiles(kserveManifests(c))

const writeDir = async (dir: string, files: Record<string, string>): Promise<void> => {
  await mkdir(dir, { recursive: true })
  // A file no longer rendered must not linger and be applied.
  for (const stale of (await readdir(dir)).filter((f) => f.endsWith('.yaml') && !(f in files))) await rm(join(dir, stale))
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text)
  process.stdout.write(`wrote ${Object.keys(files).map((f) => relative(process.cwd(), join(dir, f))).join(', ')}\n`)
}

const write = async (): Promise<void> => {
  await writeDir(RENDERED_DIR, render())
  await writeDir(KSERVE_DIR, renderKserve())
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await write()
