import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import type { KeyEntry } from '../../../edge/stores/keys/api-key.ts'
import type { BackendModelMetadata } from '../../../edge/backend-client/transport.ts'
import { encodeInstance, featureSpec, specWidth, type FeatureSpec, type FeatureValue } from '../../../shared/feature-spec.ts'
import type { InferRequest } from '../../../shared/protocol.ts'
import { demoApplicant } from '../../../dev/demo-applicant.ts'
import { ROOT } from '../../harness/servers.ts'

export const MODEL = 'credit-risk'
export const MODEL_REPOSITORY = join(ROOT, 'models')
export const PREDICT_PATH = `/v1/models/${MODEL}/predict`
export const INFER_PATH = `/v2/models/${MODEL}/infer`

/** The seeded demo user whose entity features the warm runs read (edge/stores/features/demo-seed.json). */
export const WARM_USER = 'u-1'

interface ModelConfig {
  name: string
  platform: string
  max_batch_size: number
  inputs: Array<{ name: string; datatype: string; dims: number[] }>
  outputs: Array<{ name: string; datatype: string; dims: number[] }>
  version_policy?: { latest?: number; specific?: number[] }
  features?: unknown
  postprocess?: unknown
}

const readConfig = async (): Promise<ModelConfig> =>
  JSON.parse(await readFile(join(MODEL_REPOSITORY, MODEL, 'config.json'), 'utf8')) as ModelConfig

/** Version directories the backend would serve under the model's version policy. */
const servedVersions = async (config: ModelConfig): Promise<string[]> => {
  const entries = await readdir(join(MODEL_REPOSITORY, MODEL), { withFileTypes: true })
  const all = entries.filter((e) => e.isDirectory() && /^[1-9][0-9]*$/.test(e.name)).map((e) => Number(e.name)).sort((a, b) => a - b)
  const policy = config.version_policy
  const chosen = policy?.specific ? all.filter((v) => policy.specific!.includes(v)) : policy?.latest ? all.slice(-policy.latest) : all.slice(-1)
  return chosen.map(String)
}

/**
 * The credit-risk metadata as `GET /v2/models/credit-risk` serves it, read from the model's own
 * `models/credit-risk/config.json` (the feature spec and postprocess the edge compiles from).
 */
export const creditRiskMetadata = async (): Promise<BackendModelMetadata> => {
  const config = await readConfig()
  const batched = config.max_batch_size > 0
  const tensor = (t: { name: string; datatype: string; dims: number[] }) =>
    ({ name: t.name, datatype: t.datatype, shape: batched ? [-1, ...t.dims] : [...t.dims] }) as BackendModelMetadata['inputs'][number]
  return {
    name: MODEL,
    versions: await servedVersions(config),
    platform: 'onnxruntime_onnx',
    inputs: config.inputs.map(tensor),
    outputs: config.outputs.map(tensor),
    features: config.features,
    postprocess: config.postprocess,
  }
}

export const applicant = demoApplicant

/** A predict body with `count` distinct instances (nothing for dedupe to collapse). */
export const predictBody = (count: number, userId: string): string =>
  JSON.stringify({ instances: Array.from({ length: count }, (_, i) => applicant(i)), entity: { user_id: userId } })

/**
 * The backend-direct equivalent of `predictBody(1, WARM_USER)`: the same applicant enriched with
 * the warm user's seeded entity features, encoded exactly as the edge encodes it, one FP32 row.
 */
export const equivalentInferBody = async (): Promise<string> => {
  const config = await readConfig()
  const spec: FeatureSpec = featureSpec.parse(config.features)
  const seed = JSON.parse(await readFile(join(ROOT, 'edge/stores/features/demo-seed.json'), 'utf8')) as Record<string, Record<string, Record<string, FeatureValue>>>
  const instance = { ...applicant(0), ...seed.user?.[WARM_USER] }
  const width = specWidth(spec)
  const row = new Float32Array(width)
  encodeInstance(spec, instance, row)
  const request: InferRequest = {
    id: 'bench-edge',
    inputs: [{ name: spec.input, shape: [1, width], datatype: 'FP32', data: Array.from(row) }],
    outputs: [{ name: (config.postprocess as { output: string }).output }],
  }
  return JSON.stringify(request)
}

/** A fresh predict key and its stored entry, with a limit no benchmark run reaches. */
export const benchKey = async (): Promise<{ key: string; entry: KeyEntry }> => {
  const key = generateApiKey('bench')
  return { key, entry: { name: 'bench', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1_000_000 } }
}
