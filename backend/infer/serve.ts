import type { InferResponse } from '../../shared/protocol.ts'
import { toJsonData } from '../executor/tensor.ts'
import type { ModelVersion } from '../loader/model-version.ts'
import { parseInferRequest, type ParseLimits } from './request.ts'

export interface ServeOptions {
  limits: ParseLimits
  /** performance.now() time by which the request must start running. */
  deadline?: number
  /** Response id when the request names none. */
  fallbackId: () => string
}

/** One infer request through a served version: check, queue, answer with this request's rows. */
export const serveInfer = async (served: ModelVersion, body: unknown, options: ServeOptions): Promise<{ response: InferResponse; rows: number; queueUs: number }> => {
  const request = parseInferRequest(body, served.config, options.limits)
  const { drift } = served
  // Drift counts every served row's prediction, so the run computes it even when the client asked for other outputs.
  const outputs = drift && !request.outputs.includes(drift.output) ? [...request.outputs, drift.output] : request.outputs
  const result = await served.submit({ inputs: request.inputs, rows: request.rows, outputs, deadline: options.deadline })
  drift?.record(request.inputs, request.rows, result.outputs)
  const response: InferResponse = {
    model_name: served.model,
    model_version: String(served.version),
    id: request.id ?? options.fallbackId(),
    parameters: {
      queue_us: result.queueUs,
      compute_us: result.computeUs,
      batch_size: result.batchSize,
      batch_reason: result.batchReason,
    },
    outputs: request.outputs.map((name) => {
      const tensor = result.outputs[name]
      return { name, shape: tensor.dims, datatype: tensor.datatype, data: toJsonData(tensor) }
    }),
  }
  return { response, rows: request.rows, queueUs: result.queueUs }
}
