import type { Datatype } from './datatypes.ts'

/**
 * Open Inference Protocol (KServe V2) REST shapes, as both tiers exchange them.
 * See kserve/open-inference-protocol `specification/protocol/inference_rest.md`.
 */
export type Parameters = Record<string, string | number | boolean>

/** Nested or flat, row-major tensor contents as JSON carries them. */
export type TensorData = ReadonlyArray<unknown>

export interface RequestInput {
  name: string
  shape: number[]
  datatype: Datatype
  parameters?: Parameters
  data: TensorData
}

export interface RequestOutput {
  name: string
  parameters?: Parameters
}

export interface InferRequest {
  id?: string
  parameters?: Parameters
  inputs: RequestInput[]
  outputs?: RequestOutput[]
}

export interface ResponseOutput {
  name: string
  shape: number[]
  datatype: Datatype
  parameters?: Parameters
  data: Array<number | boolean | string>
}

/**
 * Why a batch left the queue: full, an instance was free (`idle` dispatch), the oldest request's
 * delay ran out or a preferred size formed (`delay` dispatch); `single` when batching is off.
 */
export const BATCH_REASONS = ['full', 'idle', 'delay', 'preferred', 'single'] as const
export type BatchReason = (typeof BATCH_REASONS)[number]

/** Parameters every infer response carries, explaining how it was served. */
export interface ServedParameters extends Parameters {
  queue_us: number
  compute_us: number
  batch_size: number
  batch_reason: BatchReason
}

export interface InferResponse {
  model_name: string
  model_version?: string
  id: string
  parameters: ServedParameters
  outputs: ResponseOutput[]
}

export interface TensorMetadata {
  name: string
  datatype: Datatype
  shape: number[]
}

export interface ModelMetadata {
  name: string
  versions?: string[]
  platform: string
  inputs: TensorMetadata[]
  outputs: TensorMetadata[]
}

export interface ErrorBody {
  error: string
}
