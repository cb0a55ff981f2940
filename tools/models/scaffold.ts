import { copyFile, mkdir, readFile, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { ModelConfigInput } from '../../backend/repository/model-config.ts'
import { CONFIG_FILE, MODEL_FILE } from '../../backend/repository/repository.ts'
import { writeModelConfig } from '../training/repository-writer.ts'
import { rewriteManifest } from './manifest.ts'
import { readSignature, type GraphSignature, type GraphTensor } from './signature.ts'

/** Rows a batch may hold: enough for batching to pay on CPU, small enough that warm-up stays quick. */
export const DEFAULT_MAX_BATCH_SIZE = 64

export interface NewModelOptions {
  onnxFile: string
  name: string
  repository: string
  version: number
  /** Write a feature spec skeleton (and a postprocess for a classifier's probabilities) so predict works. */
  features: boolean
  /** The edge the printed curl calls. */
  edgeUrl: string
}

export interface NewModel {
  modelDir: string
  versionDir: string
  /** Whether config.json was written (false: an existing one was kept for this new version). */
  wroteConfig: boolean
  config: ModelConfigInput
  /** Commands that call the model through the edge, `$EDGE_INFER_KEY` standing for the API key. */
  curls: string[]
}

/** Batching needs the leading dimension of every tensor to be free: the rows of a batch. */
const batchable = (signature: GraphSignature): boolean =>
  [...signature.inputs, ...signature.outputs].every((t) => t.shape.length >= 1 && t.shape[0] === -1)

const tensorConfig = (tensor: GraphTensor, batched: boolean) => ({ name: tensor.name, datatype: tensor.datatype, dims: batched ? tensor.shape.slice(1) : tensor.shape })

/** The one FP32 [batch, width] input a feature spec can fill, and its width. */
const featureInput = (signature: GraphSignature, batched: boolean): { name: string; width: number } | undefined => {
  const [input] = signature.inputs
  if (!batched || signature.inputs.length !== 1 || input.datatype !== 'FP32' || input.shape.length !== 2 || input.shape[1] < 1) return undefined
  return { name: input.name, width: input.shape[1] }
}

/** A classifier's probabilities: an FP32 [batch, k] output with k ≥ 2 (named "probabilities" by preference). */
const probabilityOutput = (signature: GraphSignature): { name: string; width: number } | undefined => {
  const candidates = signature.outputs.filter((o) => o.datatype === 'FP32' && o.shape.length === 2 && o.shape[1] >= 2)
  const chosen = candidates.find((o) => /prob/i.test(o.name)) ?? candidates[0]
  return chosen && { name: chosen.name, width: chosen.shape[1] }
}

/** config.json for a graph: its signature and the batching defaults described in docs/bring-your-own-model.md. */
export const configFor = (name: string, signature: GraphSignature, withFeatures: boolean): ModelConfigInput => {
  const batched = batchable(signature)
  const config: ModelConfigInput = {
    name,
    platform: 'onnxruntime',
    max_batch_size: batched ? DEFAULT_MAX_BATCH_SIZE : 0,
    inputs: signature.inputs.map((t) => tensorConfig(t, batched)),
    outputs: signature.outputs.map((t) => tensorConfig(t, batched)),
    // Under `idle` a batch leaves as soon as an instance is free: max_queue_delay_us and
    // preferred_batch_sizes would decide nothing, so they are not written.
    ...(batched ? { dynamic_batching: { dispatch: 'idle' as const, max_queue_size: 4_096, default_timeout_us: 0 } } : {}),
    instance_count: 1,
    execution_providers: ['cpu'],
    intra_op_threads: 1,
    version_policy: { latest: 1 },
  }
  if (!withFeatures) return config
  const input = featureInput(signature, batched)
  if (!input) throw new Error('--features needs one FP32 input of shape [batch, width]; this graph has ' + signature.inputs.map((i) => `${i.name} ${i.datatype} [${i.shape}]`).join(', '))
  config.features = {
    input: input.name,
    features: Array.from({ length: input.width }, (_, i) => ({ name: `feature_${i}`, description: `column ${i} of ${input.name}: rename, and set its type and range`, type: 'number' as const, min: -1_000_000, max: 1_000_000 })),
  }
  const output = probabilityOutput(signature)
  if (output) config.postprocess = { output: output.name, labels: Array.from({ length: output.width }, (_, i) => `class_${i}`) }
  return config
}

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false)

const zeros = (tensor: { name: string; datatype: string; dims: readonly number[] }, batched: boolean) => {
  const shape = [...(batched ? [1] : []), ...tensor.dims.map((d) => (d === -1 ? 1 : d))]
  const length = shape.reduce((a, b) => a * b, 1)
  const value = tensor.datatype === 'BOOL' ? false : tensor.datatype === 'BYTES' ? '' : 0
  return { name: tensor.name, shape, datatype: tensor.datatype, data: Array.from({ length }, () => value) }
}

/** curl lines that call the model through the edge: the tensor route always, predict when it has a feature spec and postprocess. */
export const curlsFor = (config: ModelConfigInput, edgeUrl: string): string[] => {
  const edge = edgeUrl.replace(/\/+$/, '')
  const headers = `-H 'content-type: application/json' -H "x-api-key: $EDGE_INFER_KEY"`
  const batched = (config.max_batch_size ?? 0) > 0
  const infer = JSON.stringify({ inputs: config.inputs.map((i) => zeros(i, batched)) })
  const lines = [`curl -s ${edge}/v2/models/${config.name}/infer ${headers} -d '${infer}'`]
  if (config.features && config.postprocess) {
    const instance = Object.fromEntries(config.features.features.map((f) => [f.name, 0]))
    lines.push(`curl -s ${edge}/v1/models/${config.name}/predict ${headers} -d '${JSON.stringify({ instances: [instance] })}'`)
  }
  return lines
}

/**
 * A repository entry from an ONNX file: config.json from the graph's signature (kept when the
 * model already has one: this is then a new version), the version folder with model.onnx, and
 * its MANIFEST. The config is checked with the backend's own schema before anything is written.
 */
export const newModel = async (options: NewModelOptions): Promise<NewModel> => {
  const bytes = await readFile(options.onnxFile)
  const signature = readSignature(bytes)
  const modelDir = resolve(options.repository, options.name)
  const versionDir = join(modelDir, String(options.version))
  if (await exists(versionDir)) throw new Error(`${versionDir} exists already; pick another --version`)
  const configPath = join(modelDir, CONFIG_FILE)
  const keep = await exists(configPath)
  const config = keep ? (JSON.parse(await readFile(configPath, 'utf8')) as ModelConfigInput) : configFor(options.name, signature, options.features)
  if (!keep) await writeModelConfig(resolve(options.repository), config)
  await mkdir(versionDir, { recursive: true })
  await copyFile(options.onnxFile, join(versionDir, MODEL_FILE))
  await rewriteManifest(versionDir)
  return { modelDir, versionDir, wroteConfig: !keep, config, curls: curlsFor(config, options.edgeUrl) }
}
