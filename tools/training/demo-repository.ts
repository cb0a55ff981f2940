import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { ModelConfigInput } from '../../backend/repository/model-config.ts'
import { specWidth } from '../../shared/feature-spec.ts'
import { creditRiskSpec, creditRiskSpecInput, generateApplicants } from './applicants.ts'
import { computeBaseline } from './baseline.ts'
import { applyScaling, encodeRows, fitScaling, type Matrix } from './dataset.ts'
import { WINDOW } from './drift-thresholds.ts'
import { binaryMetrics, constantMetrics, positiveRate, type BinaryMetrics } from './metrics.ts'
import { predict, train, type TrainOptions } from './mlp.ts'
import { networkToOnnx, type GraphNames } from './onnx-writer.ts'
import { createRandom } from './random.ts'
import { DYNAMIC_BATCHING, jsonBytes, writeModelConfig, writeModelVersion } from './repository-writer.ts'
import { verifyOnnx } from './verify-onnx.ts'

/** The demo model the repository ships: credit risk from a dozen applicant features. */
export const DEMO_MODEL = 'credit-risk'
const LABELS = ['low_risk', 'high_risk'] as const
const THRESHOLD = 0.5
const NAMES: GraphNames = { name: DEMO_MODEL, input: creditRiskSpec.input, output: 'probabilities' }
const TRAIN_ROWS = 16_000
/**
 * Drawn after the training rows from the same stream, so training is unchanged by them: monitoring
 * windows of undrifted data that calibrate the baseline's drift levels, and labelled rows the model
 * never fitted that calibrate its prediction bins for CBPE.
 */
export const HELD_OUT_ROWS = 100 * WINDOW
/** One holdout for every version, drawn apart from all training samples, so versions compare on the same rows. */
const HOLDOUT = { rows: 4_000, seed: 100 }
const WIDTH = specWidth(creditRiskSpec)

/** Small on purpose: the data is 16k rows, and the build has to stay well under a minute. */
const TRAINING: Omit<TrainOptions, 'epochs'> = { sizes: [WIDTH, 32, 16, 2], batchSize: 64, learningRate: 0.003, weightDecay: 0.1 }

interface Recipe {
  version: number
  /** Each version trains on its own sample, as a retrain on fresh data would. */
  dataSeed: number
  trainSeed: number
  epochs: number
}

const RECIPES: readonly Recipe[] = [
  { version: 1, dataSeed: 101, trainSeed: 201, epochs: 8 },
  { version: 2, dataSeed: 102, trainSeed: 202, epochs: 16 },
]

const config: ModelConfigInput = {
  name: DEMO_MODEL,
  platform: 'onnxruntime',
  max_batch_size: 64,
  inputs: [{ name: NAMES.input, datatype: 'FP32', dims: [WIDTH] }],
  outputs: [{ name: NAMES.output, datatype: 'FP32', dims: [LABELS.length] }],
  dynamic_batching: DYNAMIC_BATCHING,
  instance_count: 1,
  execution_providers: ['cuda', 'cpu'],
  intra_op_threads: 1,
  version_policy: { latest: 2 },
  pinned: true,
  features: creditRiskSpecInput,
  postprocess: { output: NAMES.output, labels: [...LABELS], threshold: THRESHOLD },
}

export interface VersionSummary {
  version: number
  epochs: number
  holdout: BinaryMetrics
  /** Always predicting the training base rate. */
  constant: BinaryMetrics
  /** Largest |onnxruntime - TypeScript| over the holdout probabilities. */
  onnxMaxDiff: number
}

export interface DemoRepositorySummary {
  model: string
  versions: VersionSummary[]
}

/** Six decimals are plenty for a metrics file a person reads. */
const rounded = (m: BinaryMetrics): BinaryMetrics => {
  const r = (x: number): number => Math.round(x * 1e6) / 1e6
  return { rows: m.rows, accuracy: r(m.accuracy), auc: r(m.auc), log_loss: r(m.log_loss) }
}

/** Probability of labels[1] from rows×2 class probabilities. */
const positiveColumn = (probabilities: Float64Array): Float64Array =>
  Float64Array.from({ length: probabilities.length / 2 }, (_, i) => probabilities[i * 2 + 1])

interface Holdout {
  x: Matrix
  labels: Uint8Array
}

const buildVersion = async (outDir: string, recipe: Recipe, holdout: Holdout): Promise<VersionSummary> => {
  const sample = generateApplicants(TRAIN_ROWS + HELD_OUT_ROWS, recipe.dataSeed)
  const applicants = sample.applicants.slice(0, TRAIN_ROWS)
  const labels = sample.labels.subarray(0, TRAIN_ROWS)
  const heldOut = sample.applicants.slice(TRAIN_ROWS)
  const x = encodeRows(creditRiskSpec, applicants)

  const scaling = fitScaling(creditRiskSpec, x)
  const options: TrainOptions = { ...TRAINING, epochs: recipe.epochs }
  const network = { scaling, layers: train(applyScaling(scaling, x), labels, options, createRandom(recipe.trainSeed)) }
  const model = networkToOnnx(network, NAMES)

  const holdoutProbabilities = predict(network, holdout.x)
  const onnxMaxDiff = await verifyOnnx(model, NAMES, holdout.x, holdoutProbabilities)
  const scores = rounded(binaryMetrics(positiveColumn(holdoutProbabilities), holdout.labels, THRESHOLD))
  const baseRate = positiveRate(labels)
  const constant = rounded(constantMetrics(baseRate, holdout.labels, THRESHOLD))

  const baseline = computeBaseline({
    model: DEMO_MODEL,
    version: recipe.version,
    spec: creditRiskSpec,
    instances: applicants,
    positive: positiveColumn(predict(network, x)),
    labels: LABELS,
    threshold: THRESHOLD,
    heldOut: { instances: heldOut, positive: positiveColumn(predict(network, encodeRows(creditRiskSpec, heldOut))), outcomes: sample.labels.subarray(TRAIN_ROWS) },
  })
  const metrics = {
    model: DEMO_MODEL,
    version: recipe.version,
    training: {
      rows: TRAIN_ROWS,
      data_seed: recipe.dataSeed,
      train_seed: recipe.trainSeed,
      layers: options.sizes,
      epochs: options.epochs,
      batch_size: options.batchSize,
      learning_rate: options.learningRate,
      weight_decay: options.weightDecay,
    },
    holdout: { seed: HOLDOUT.seed, ...scores },
    constant: { base_rate: Math.round(baseRate * 1e6) / 1e6, ...constant },
  }
  await writeModelVersion(outDir, DEMO_MODEL, recipe.version, {
    'model.onnx': model,
    'baseline.json': jsonBytes(baseline),
    'metrics.json': jsonBytes(metrics),
  })
  return { version: recipe.version, epochs: recipe.epochs, holdout: scores, constant, onnxMaxDiff }
}

/**
 * Trains and writes `<outDir>/credit-risk` from scratch: config.json and one folder per version
 * with model.onnx, baseline.json, metrics.json and MANIFEST. Same code, same bytes, every time.
 */
export const buildDemoRepository = async (outDir: string): Promise<DemoRepositorySummary> => {
  // Start clean so a file dropped from the build cannot linger in the committed repository.
  await rm(join(outDir, DEMO_MODEL), { recursive: true, force: true })
  await writeModelConfig(outDir, config)
  const sample = generateApplicants(HOLDOUT.rows, HOLDOUT.seed)
  const holdout = { x: encodeRows(creditRiskSpec, sample.applicants), labels: sample.labels }
  const versions: VersionSummary[] = []
  for (const recipe of RECIPES) versions.push(await buildVersion(outDir, recipe, holdout))
  return { model: DEMO_MODEL, versions }
}
