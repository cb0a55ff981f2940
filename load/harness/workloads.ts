import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildComputeBoundModel } from '../../tools/training/compute-bound.ts'
import { createRandom } from '../../tools/training/random.ts'
import { encodeInstance, featureSpec, specWidth, type FeatureValue } from '../../shared/feature-spec.ts'
import type { InferRequest } from '../../shared/protocol.ts'
import { onCleanup } from './processes.ts'
import { ROOT } from './servers.ts'

/** One model as the benchmark drives it: where the server finds it and what a request carries. */
export interface Workload {
  model: string
  /** MODEL_REPOSITORY for the real server. */
  repository: string
  /** The OIP infer body every request sends: JSON, or a binary tensor request with its `headers`. */
  body: string | Uint8Array
  headers?: Readonly<Record<string, string>>
  rowsPerRequest: number
  inputName: string
  /** One encoded row, for the in-process ceiling. */
  row: Float32Array
  /** model.onnx of the version that serves unversioned requests. */
  modelPath(version: string): string
  /** Whether the model ships a drift baseline, so the server counts its traffic. */
  monitored: boolean
  /** The version that serves unversioned requests: the highest in the repository. */
  version: string
  /** The model config's batch limits, for a peer batcher that batches the same way. */
  maxBatchSize: number
  maxQueueDelayUs: number
}

/** The parts of a model's config.json the benchmark reads. */
interface ConfigFile {
  inputs: Array<{ name: string; dims: number[] }>
  max_batch_size: number
  dynamic_batching?: { max_queue_delay_us?: number }
  features?: unknown
}

const readConfig = async (repository: string, model: string): Promise<ConfigFile> =>
  JSON.parse(await readFile(join(repository, model, 'config.json'), 'utf8')) as ConfigFile

/** The highest numeric version folder: what `latest` policies serve to an unversioned request. */
const highestVersion = async (repository: string, model: string): Promise<string> => {
  const versions = (await readdir(join(repository, model))).filter((name) => /^\d+$/.test(name)).map(Number)
  if (versions.length === 0) throw new Error(`${model} has no version folders in ${repository}`)
  return String(Math.max(...versions))
}

/** What a workload takes from its model's config and folders. */
const servedModel = async (repository: string, model: string, config: ConfigFile) => ({
  version: await highestVersion(repository, model),
  maxBatchSize: config.max_batch_size,
  // The backend's default when the config names none (backend/repository/model-config.ts).
  maxQueueDelayUs: config.dynamic_batching?.max_queue_delay_us ?? 2_000,
})

/** Four decimals keep the body the size a real client's would be, not 17-digit float noise. */
const round4 = (x: number): number => Math.round(x * 1e4) / 1e4

/** The row as a request carries it: FP32 holds ~7 significant digits; printing more would send 0.27 as 0.27000001072883606. */
const printedRow = (row: Float32Array): number[] => Array.from(row, (v) => Number(v.toPrecision(7)))

const inferBody = (input: string, row: Float32Array, rows: number): string => {
  const values = printedRow(row)
  const request: InferRequest = {
    id: 'bench',
    inputs: [{ name: input, shape: [rows, row.length], datatype: 'FP32', data: Array.from({ length: rows }, () => values).flat() }],
  }
  return JSON.stringify(request)
}

/** A typical applicant: late thirties, median income, a car loan, no defaults. */
const APPLICANT: Readonly<Record<string, FeatureValue>> = {
  age: 38,
  income: 61_500,
  debt_ratio: 0.27,
  credit_utilization: 0.34,
  credit_lines: 4,
  months_employed: 52,
  loan_amount: 14_500,
  loan_term_months: 48,
  num_late_payments: 0,
  region: 'south',
  housing: 'mortgage',
  has_default_history: false,
  account_age_months: 70,
  num_products: 2,
}

/**
 * The bundled demo model, fed the feature vector a real client's applicant encodes to, with the
 * width and layout read from the model's own config (so a changed spec fails here, loudly).
 */
export const creditRiskWorkload = async (rowsPerRequest = 1): Promise<Workload> => {
  const model = 'credit-risk'
  const repository = join(ROOT, 'models')
  const config = await readConfig(repository, model)
  const spec = featureSpec.parse(config.features)
  const missing = spec.features.filter((f) => APPLICANT[f.name] === undefined && f.default === undefined).map((f) => f.name)
  if (missing.length > 0) throw new Error(`the benchmark applicant lacks features ${missing.join(', ')}`)
  const width = specWidth(spec)
  const declared = config.inputs.find((i) => i.name === spec.input)
  if (declared?.dims[0] !== width) throw new Error(`feature spec is ${width} wide, input "${spec.input}" declares ${declared?.dims}`)
  const row = new Float32Array(width)
  encodeInstance(spec, APPLICANT, row)
  return {
    model,
    repository,
    body: inferBody(spec.input, row, rowsPerRequest),
    rowsPerRequest,
    inputName: spec.input,
    row,
    modelPath: (version) => join(repository, model, version, 'model.onnx'),
    monitored: true,
    ...(await servedModel(repository, model, config)),
  }
}

/**
 * The 64 → 1024 → 1024 → 1024 → 2 MLP, written to a temporary repository that is removed when
 * the benchmark ends. Inputs are standard-normal, like the standardized features it stands for.
 */
export const computeBoundWorkload = async (rowsPerRequest = 1): Promise<Workload> => {
  const repository = await mkdtemp(join(tmpdir(), 'bench-backend-'))
  onCleanup(() => rm(repository, { recursive: true, force: true }))
  const inputs = 64
  const built = await buildComputeBoundModel(repository, { inputs, hidden: [1024, 1024, 1024], outputs: 2 })
  const config = await readConfig(repository, built.name)
  const input = config.inputs[0].name
  const random = createRandom(7)
  const row = Float32Array.from({ length: inputs }, () => round4(random.normal()))
  return {
    model: built.name,
    repository,
    body: inferBody(input, row, rowsPerRequest),
    rowsPerRequest,
    inputName: input,
    row,
    modelPath: (version) => join(repository, built.name, version, 'model.onnx'),
    monitored: false,
    ...(await servedModel(repository, built.name, config)),
  }
}

/**
 * The same request in the binary tensor data extension: a JSON header whose input names its
 * `binary_data_size`, then the rows' FP32 bytes (the values the JSON body carries).
 */
export const asBinary = (workload: Workload): Workload => {
  const row = printedRow(workload.row)
  const values = Float32Array.from({ length: workload.rowsPerRequest * row.length }, (_, i) => row[i % row.length])
  const header = new TextEncoder().encode(JSON.stringify({
    id: 'bench',
    inputs: [{ name: workload.inputName, shape: [workload.rowsPerRequest, workload.row.length], datatype: 'FP32', parameters: { binary_data_size: values.byteLength } }],
  }))
  const body = new Uint8Array(header.length + values.byteLength)
  body.set(header)
  body.set(new Uint8Array(values.buffer), header.length)
  return { ...workload, body, headers: { 'inference-header-content-length': String(header.length) } }
}

/** How the backend's batcher sends a batch (`dynamic_batching.dispatch` in a model config). */
export type Dispatch = 'idle' | 'delay'

/**
 * The workload served from a temporary copy of its repository whose config sets
 * `dynamic_batching.dispatch`, removed when the benchmark ends.
 */
export const withDispatch = async (workload: Workload, dispatch: Dispatch): Promise<Workload> => {
  const repository = await mkdtemp(join(tmpdir(), `bench-backend-${dispatch}-`))
  onCleanup(() => rm(repository, { recursive: true, force: true }))
  await cp(workload.repository, repository, { recursive: true })
  const file = join(repository, workload.model, 'config.json')
  const config = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown> & { dynamic_batching?: Record<string, unknown> }
  await writeFile(file, `${JSON.stringify({ ...config, dynamic_batching: { ...config.dynamic_batching, dispatch } }, null, 2)}\n`)
  return { ...workload, repository, modelPath: (version) => join(repository, workload.model, version, 'model.onnx') }
}
