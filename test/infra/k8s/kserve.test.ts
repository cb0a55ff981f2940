import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { Ajv, type AnySchemaObject, type ValidateFunction } from 'ajv'
import { parseAllDocuments } from 'yaml'
import { beforeAll, describe, expect, it } from 'vitest'
import crd from '../../fixtures/kserve/serving.kserve.io_inferenceservices-v0.20.0.json' with { type: 'json' }
import { settingsSchema } from '../../../backend/settings.ts'
import { queueDepthQuery, requestRateQuery } from '../../../infra/k8s/autoscaling.ts'
import { deployment, serviceMonitor } from '../../../infra/k8s/backend.ts'
import { BACKEND_PORT, METRICS_PATH, METRICS_PORT, METRICS_PORT_NAME, PORT_NAME, QUEUE_DEPTH_METRIC, READY_PATH, defaultConfig } from '../../../infra/k8s/config.ts'
import {
  AUTOSCALER_CLASS, AUTOSCALER_CLASS_ANNOTATION, DEPLOYMENT_MODE, DEPLOYMENT_MODE_ANNOTATION, KSERVE_CONTAINER, PROTOCOL_ENV, predictorConfig, predictorName,
} from '../../../infra/k8s/kserve.ts'
import { KSERVE_DIR, kserveManifests, renderKserve } from '../../../infra/k8s/render.ts'

type Json = Record<string, unknown>

/**
 * What kubectl's default (strict) field validation does beyond the schema's own keywords: an unknown
 * field is an error wherever the schema lists properties and does not keep unknown fields. Without
 * this, a misspelt field would pass here and be pruned silently by the API server.
 */
const strictFields = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(strictFields)
  if (schema === null || typeof schema !== 'object') return schema
  const s = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === 'properties' ? Object.fromEntries(Object.entries(v as Json).map(([p, sub]) => [p, strictFields(sub)])) : strictFields(v)])) as Json
  if (s.properties !== undefined && s.additionalProperties === undefined && s['x-kubernetes-preserve-unknown-fields'] !== true) s.additionalProperties = false
  return s
}

interface CrdVersion { name: string; served: boolean; storage: boolean; schema: { openAPIV3Schema: AnySchemaObject } }
const fixture = crd as unknown as { kind: string; spec: { group: string; names: { kind: string }; versions: CrdVersion[] } }
const version = fixture.spec.versions.find((v) => v.storage)!

const INT32 = 2 ** 31
let compiled: ValidateFunction | undefined
/** Compiled once (the schema is large): ajv with the CRD's formats, the schema made field-strict. */
const validator = (): ValidateFunction => {
  if (compiled !== undefined) return compiled
  // Unoptimised code compiles this 0.6 MB schema several times faster; validation of a few objects does not notice.
  const ajv = new Ajv({ allErrors: true, strictTypes: false, code: { optimize: false } })
  // The API server's structural-schema extensions: list and map semantics, not value constraints ajv could check.
  ajv.addVocabulary(['x-kubernetes-list-type', 'x-kubernetes-map-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-int-or-string', 'x-kubernetes-preserve-unknown-fields'])
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -INT32 && n < INT32 })
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) })
  ajv.addFormat('date-time', (s: string) => !Number.isNaN(Date.parse(s)))
  compiled = ajv.compile(strictFields(version.schema.openAPIV3Schema) as AnySchemaObject)
  return compiled
}

/** What a cluster would receive: the committed files, parsed. */
const committed = async (): Promise<Record<string, Json[]>> => {
  const files = (await readdir(KSERVE_DIR)).filter((f) => f.endsWith('.yaml')).sort()
  return Object.fromEntries(await Promise.all(files.map(async (f) => [f, parseAllDocuments(await readFile(join(KSERVE_DIR, f), 'utf8')).map((d) => d.toJS() as Json)] as const)))
}

interface Container {
  name: string
  ports: Array<{ name: string; containerPort: number }>
  env: Array<{ name: string; value?: string }>
  readinessProbe: { httpGet: { path: string; port: string } }
  securityContext: Json
}
interface PodSpec { containers: Container[]; initContainers: Container[]; securityContext: Json; serviceAccountName: string; topologySpreadConstraints: Array<{ labelSelector: { matchLabels: Record<string, string> } }> }
interface Predictor extends PodSpec { labels: Record<string, string>; annotations?: Record<string, string>; minReplicas?: number }
interface Isvc { apiVersion: string; kind: string; metadata: { name: string; namespace: string; annotations: Record<string, string> }; spec: { predictor: Predictor } }

const isvcs = async (): Promise<Array<[string, Isvc]>> =>
  Object.entries(await committed()).flatMap(([f, docs]) => docs.filter((d) => d.kind === 'InferenceService').map((d) => [f, d as unknown as Isvc] as [string, Isvc]))
const byKind = async (kind: string): Promise<Json> => {
  const found = Object.values(await committed()).flat().filter((o) => o.kind === kind)
  expect(found, kind).toHaveLength(1)
  return found[0]!
}
const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v)
const variantOf = (i: Isvc) => i.spec.predictor.labels['edge-infer/variant'] as 'gpu' | 'cpu'

describe('KServe InferenceService (infra/k8s/kserve.ts)', () => {
  beforeAll(() => void validator())

  it('the fixture is KServe\'s InferenceService CRD and the rendered objects are of its served version', async () => {
    expect(fixture).toMatchObject({ kind: 'CustomResourceDefinition', spec: { group: 'serving.kserve.io', names: { kind: 'InferenceService' } } })
    expect(version).toMatchObject({ name: 'v1beta1', served: true })
    const all = await isvcs()
    expect(all.map(([, i]) => variantOf(i)).sort()).toEqual(['cpu', 'gpu'])
    for (const [, i] of all) expect(i.apiVersion).toBe(`${fixture.spec.group}/${version.name}`)
  })

  it('the committed files are a fresh render (run `npm run infra:render`)', async () => {
    const fresh = renderKserve()
    expect((await readdir(KSERVE_DIR)).filter((f) => f.endsWith('.yaml')).sort()).toEqual(Object.keys(fresh).sort())
    for (const [file, text] of Object.entries(fresh)) expect(await readFile(join(KSERVE_DIR, file), 'utf8'), file).toBe(text)
    for (const o of Object.values(kserveManifests()).flat()) expect(() => o.validate()).not.toThrow()
  })

  it('every rendered InferenceService is valid against the CRD\'s openAPIV3Schema', async () => {
    const validate = validator()
    for (const [file, i] of await isvcs()) expect({ file, valid: validate(i), errors: validate.errors ?? [] }).toEqual({ file, valid: true, errors: [] })
  })

  it('the validation is real: a wrong type, an unknown field and a missing required field are refused', async () => {
    const validate = validator()
    const [[, isvc]] = await isvcs() as [[string, Isvc]]
    const mutated = (change: (i: Isvc) => void): Isvc => {
      const copy = structuredClone(isvc)
      change(copy)
      return copy
    }
    const refusedAt = (i: Isvc): string[] => (validate(i) ? [] : validate.errors!.map((e) => `${e.instancePath} ${e.message ?? ''}`))
    expect(refusedAt(mutated((i) => { (i.spec.predictor.containers[0]!.ports[0] as Json).containerPort = 'eight thousand' })).join('\n')).toMatch(/containerPort must be integer/)
    // A custom predictor has no protocolVersion field in v0.20 (hence PROTOCOL on the container).
    expect(refusedAt(mutated((i) => { (i.spec.predictor as unknown as Json).protocolVersion = 'v2' })).join('\n')).toMatch(/\/spec\/predictor must NOT have additional properties/)
    expect(refusedAt(mutated((i) => { delete (i.spec.predictor.containers[0] as Partial<Container>).name })).join('\n')).toMatch(/\/spec\/predictor\/containers\/0 must have required property 'name'/)
    expect(refusedAt(isvc)).toEqual([])
  })

  it('a custom predictor speaking OIP v2, ready on /v2/health/ready, its first port the http one and the metrics port kept', async () => {
    for (const [, i] of await isvcs()) {
      const { containers } = i.spec.predictor
      // KServe reads the protocol and the Service's port 80 target from the first container's first port.
      expect(containers).toHaveLength(1)
      const [server] = containers as [Container]
      expect(server.name).toBe(KSERVE_CONTAINER)
      expect(server.env).toContainEqual(PROTOCOL_ENV)
      expect(PROTOCOL_ENV).toEqual({ name: 'PROTOCOL', value: 'v2' })
      // The backend's settings take the container's env with KServe's variable in it.
      const env = Object.fromEntries(server.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value]))
      expect(settingsSchema.safeParse({ ...env, INFER_TOKEN: 'x'.repeat(16) }).success).toBe(true)
      expect(server.ports[0]).toMatchObject({ name: PORT_NAME, containerPort: BACKEND_PORT })
      expect(server.ports).toContainEqual(expect.objectContaining({ name: METRICS_PORT_NAME, containerPort: METRICS_PORT }))
      expect(server.readinessProbe.httpGet).toEqual({ path: READY_PATH, port: PORT_NAME })
      // The init container fetches and checks the repository: no storage initializer.
      expect(server.env.map((e) => e.name)).not.toContain('STORAGE_URI')
      expect(i.spec.predictor.initContainers.map((c) => c.name)).toEqual(['fetch-models'])
      expect(i.metadata.annotations).toMatchObject({ [DEPLOYMENT_MODE_ANNOTATION]: DEPLOYMENT_MODE, [AUTOSCALER_CLASS_ANNOTATION]: AUTOSCALER_CLASS })
      expect([DEPLOYMENT_MODE, AUTOSCALER_CLASS]).toEqual(['Standard', 'external'])
    }
  })

  it('is the Deployment\'s pod: same image, resources, probes, env, fetch and hardened security context', async () => {
    for (const [, i] of await isvcs()) {
      const variant = variantOf(i)
      const pod = JSON.parse(JSON.stringify(deployment(defaultConfig, variant).spec!.template.spec)) as PodSpec
      const p = i.spec.predictor
      const { name: _n, env, ...server } = p.containers[0]!
      const { name: _m, env: deploymentEnv, ...deploymentServer } = pod.containers[0]!
      expect(server).toEqual(deploymentServer)
      expect(env).toEqual([PROTOCOL_ENV, ...deploymentEnv])
      expect(p.initContainers).toEqual(pod.initContainers)
      expect(p.securityContext).toEqual(pod.securityContext)
      expect(server.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })
      expect(p.serviceAccountName).toBe(defaultConfig.name)
      // The fetch alone holds AWS credentials: the IRSA webhook skips the server, by the name it runs under.
      expect(p.annotations?.['eks.amazonaws.com/skip-containers']).toBe(KSERVE_CONTAINER)
      for (const t of p.topologySpreadConstraints) expect(matches(t.labelSelector.matchLabels, p.labels)).toBe(true)
      // KEDA owns the replica count (autoscalerClass external).
      expect(p.minReplicas).toBeUndefined()
    }
  })

  it('the predictor\'s ServiceMonitor, PDB, NetworkPolicy and ScaledObject select its pods, and base.yaml\'s ServiceMonitor does not', async () => {
    const sm = await byKind('ServiceMonitor') as { spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string }>; podTargetLabels: string[] } }
    const pdb = await byKind('PodDisruptionBudget') as { spec: { selector: { matchLabels: Record<string, string> } } }
    const netpol = await byKind('NetworkPolicy') as { spec: { podSelector: { matchLabels: Record<string, string> } } }
    const so = await byKind('ScaledObject') as { spec: { scaleTargetRef: { kind: string; name: string }; fallback: unknown; triggers: Array<{ name: string; metadata: { query: string; ignoreNullValues: string } }> } }
    const baseMonitor = serviceMonitor(defaultConfig).spec!.selector.matchLabels!
    for (const [, i] of await isvcs()) {
      // KServe gives its Service, Deployment and pods the predictor's labels.
      const labels = i.spec.predictor.labels
      expect(matches(sm.spec.selector.matchLabels, labels)).toBe(true)
      expect(matches(baseMonitor, labels)).toBe(false)
      expect(matches(pdb.spec.selector.matchLabels, labels)).toBe(true)
      expect(matches(netpol.spec.podSelector.matchLabels, labels)).toBe(true)
      expect(sm.spec.podTargetLabels.every((l) => l in labels)).toBe(true)
    }
    expect(sm.spec.endpoints).toEqual([expect.objectContaining({ port: METRICS_PORT_NAME, path: METRICS_PATH })])
    expect(so.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: predictorName(defaultConfig) })
    expect(so.spec.fallback).toBeDefined()
    const p = predictorConfig(defaultConfig)
    expect(so.spec.triggers.map((t) => t.metadata.query)).toEqual([queueDepthQuery(p), requestRateQuery(p)])
    expect(so.spec.triggers[0]!.metadata.query).toContain(`${QUEUE_DEPTH_METRIC}{namespace="${defaultConfig.namespace}",service="${predictorName(defaultConfig)}"}`)
  })
})
