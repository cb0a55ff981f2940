import * as z from 'zod'
import type { InferRequest } from './protocol.ts'

/**
 * The Lambda CPU tier's payload: an Open Inference Protocol infer request plus the model (and
 * version) to run. Only the routing fields are checked here; the request itself is judged by the
 * backend's infer path, as on the HTTP tier.
 */
export const lambdaInferEvent = z.looseObject({
  model_name: z.string().min(1),
  model_version: z.string().optional(),
})

export type LambdaInferEvent = z.infer<typeof lambdaInferEvent> & Partial<InferRequest>

/**
 * A refusal from the Lambda handler, with the HTTP status it stands for. Unexpected faults are not
 * results: they are thrown, and Lambda reports them as a function error.
 */
export const lambdaErrorResult = z.object({
  error: z.string(),
  status: z.number().int().min(400).max(599),
})

export type LambdaErrorResult = z.infer<typeof lambdaErrorResult>
