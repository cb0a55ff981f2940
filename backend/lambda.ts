import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import type { InferRequest, InferResponse } from '../shared/protocol.ts'
import { InferenceError } from './errors.ts'
import { serveInfer } from './infer/serve.ts'
import { ModelManager } from './loader/model-manager.ts'
import { createLogger } from './logger.ts'
import { Repository } from './repository/repository.ts'
import { readSettings } from './settings.ts'

/** Lambda payload: an Open Inference Protocol infer request plus which model (and version) to run. */
export interface LambdaInferEvent extends Partial<InferRequest> {
  model_name: string
  model_version?: string
}

/** A refusal the caller can map to an HTTP status; unexpected faults are thrown (a Lambda function error). */
export interface LambdaErrorResult {
  error: string
  status: number
}

let manager: ModelManager | undefined

/** The container's model manager: created on first invoke and reused while the container is warm. */
export const lambdaManager = (): ModelManager => {
  if (!manager) {
    const settings = readSettings()
    manager = new ModelManager(new Repository(resolve(settings.MODEL_REPOSITORY)), {
      batching: false,
      memoryBudgetBytes: settings.MODEL_MEMORY_BUDGET_MB * 1024 * 1024,
      logger: createLogger(settings.LOG_LEVEL),
    })
  }
  return manager
}

/** The CPU fallback tier: same repository, validation and executor as the server, batching off. */
export const handler = async (event: unknown): Promise<InferResponse | LambdaErrorResult> => {
  try {
    if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new InferenceError(400, 'payload must be a JSON object')
    const { model_name: model, model_version: version, ...request } = event as Record<string, unknown>
    if (typeof model !== 'string' || model === '') throw new InferenceError(400, 'model_name must be a non-empty string')
    if (version !== undefined && typeof version !== 'string') throw new InferenceError(400, 'model_version must be a string')
    const settings = readSettings()
    const arrived = performance.now()
    const served = await lambdaManager().resolve(model, version)
    const limits = { maxRows: settings.MAX_REQUEST_ROWS, maxElements: settings.MAX_BODY_BYTES }
    const { response } = await serveInfer(served, request, { limits, arrived, fallbackId: randomUUID })
    return response
  } catch (err) {
    if (err instanceof InferenceError) return { error: err.message, status: err.status }
    throw err
  }
}

/** Releases the sessions (tests, and a container's SIGTERM). */
export const shutdownLambda = async (): Promise<void> => {
  await manager?.shutdown()
  manager = undefined
}
