import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import onnxProto from 'onnx-proto'
import { writeModelConfig, writeModelVersion } from '../tools/training/repository-writer.ts'
import type { ModelConfigInput } from '../backend/repository/model-config.ts'
import { labelFlippedModel } from '../tools/training/label-flip.ts'

const { onnx } = onnxProto
const DEMO_REPOSITORY = fileURLToPath(new URL('../models', import.meta.url))
const MODEL = 'credit-risk'
/** The last Gemm's bias in the demo graph (see onnx-writer): one logit per label. */
const OUTPUT_BIAS = 'dense2_bias'

/**
 * How a fixture version's model differs from the demo's v2: the same, NaN, every logit shifted, or
 * the riskiest share of applicants ranked upside down with the score distribution kept (`labelFlip`).
 */
export type Variant = 'same' | 'nan' | { shiftLogit: number } | { labelFlip: number }

/** The demo v2 graph with the output layer's bias edited (NaN poisons every row, a shift moves every prediction) or its head label-flipped. */
const editedModel = async (bytes: Uint8Array, variant: Variant): Promise<Uint8Array> => {
  if (variant === 'same') return bytes
  if (typeof variant === 'object' && 'labelFlip' in variant) return labelFlippedModel(bytes, { share: variant.labelFlip })
  const model = onnx.ModelProto.decode(bytes)
  const bias = model.graph!.initializer!.find((t) => t.name === OUTPUT_BIAS)!
  const raw = Buffer.from(bias.rawData!)
  if (variant === 'nan') raw.writeFloatLE(Number.NaN, 0)
  else raw.writeFloatLE(raw.readFloatLE(4) + variant.shiftLogit, 4)
  bias.rawData = raw
  return onnx.ModelProto.encode(model).finish()
}

/**
 * A repository (for `demo:canary` and the canary tests) serving credit-risk versions built from the demo's v2: each version is the same
 * network (and baseline) or an edited one, so a canary can be healthy, emit NaN, predict
 * higher risk for the same inputs, or rank them wrongly with the very prediction histogram of v2. Every version is loaded at start, and the entity features may
 * be sent in the request.
 */
export const createCanaryRepository = async (versions: Readonly<Record<number, Variant>>): Promise<{ root: string; remove(): Promise<void> }> => {
  const root = await mkdtemp(join(tmpdir(), 'edge-infer-canary-'))
  const demo = join(DEMO_REPOSITORY, MODEL)
  const config = JSON.parse(await readFile(join(demo, 'config.json'), 'utf8')) as ModelConfigInput
  // Synthetic traffic carries each applicant's own entity features (a request has one user id for all its rows).
  for (const f of config.features!.features) if (typeof f.source === 'object') f.source.overridable = true
  await writeModelConfig(root, { ...config, version_policy: { all: true } })
  const files = { model: await readFile(join(demo, '2', 'model.onnx')), baseline: await readFile(join(demo, '2', 'baseline.json')) }
  for (const [version, variant] of Object.entries(versions)) {
    await writeModelVersion(root, MODEL, Number(version), { 'model.onnx': await editedModel(files.model, variant), 'baseline.json': files.baseline })
  }
  return { root, remove: () => rm(root, { recursive: true, force: true }) }
}
