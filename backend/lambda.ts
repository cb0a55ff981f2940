import { resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { lambdaInferEvent, type LambdaErrorResult } from '../shared/lambda.ts'
import type { InferResponse } from '../shared/protocol.ts'
import { InferenceError } from './errors.ts'
import { serveInfer } from './infer/serve.ts'
import { inferResponse } from './infer/response.ts'
import { ModelManager } from './loader/model-manager.ts'
import { createLogger } from './logger.ts'
import { Repository } from './repository/repository.ts'
import { readSettings } from './settings.ts'

let manager: ModelManager | undefined

/** The container's model manager: created on first invoke and reused while the container is warm. */
export const lambdaManager = (): ModelManager => {
  if (!manager) {
    const settings = readSettings()
    manager = new ModelManager(new Repository(resolve(settings.MODEL_REPOSITORY)), {
      batching: false,
      placement: settings.EXECUTOR_PLACEMENT,
      mainThreadMaxUs: settings.EXECUTOR_MAIN_THREAD_MAX_US,
      memoryBudgetBytes: settings.MODEL_MEMORY_BUDGET_MB * 1024 * 1024,
      logger: createLogger(settings.LOG_LEVEL),
    })
  }
  return manager
}

/**
 * Loads the newest version of every model in the repository. Run at import inside Lambda, so the
 * work falls in the init phase (before the first invoke, and again on each new instance) instead
 * of on a client's first request; a model that fails here is retried, and refused, on demand.
 */
export const initLambda = async (): Promise<void> => {
  const m = lambdaManager()
  const names = await m.repository.names()
  await Promise.all(names.map((name) => m.resolve(name).catch(() => undefined)))
}

/** The Lambda runtime sets it; tests and tools that import the handler load nothing up front. */
export const IN_LAMBDA = process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined

/** The init-phase load, when this module runs inside Lambda. */
export const lambdaInit: Promise<void> | undefined = IN_LAMBDA ? initLambda().catch(() => undefined) : undefined
// An ES module's top-level await holds the runtime's init phase until the models are warm.
await lambdaInit

/** The CPU fallback tier: same repository, validation and executor as the server, batching off. */
export const handler = async (event: unknown): Promise<InferResponse | LambdaErrorResult> => {
  try {
    const parsed = lambdaInferEvent.safeParse(event)
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(payload)'}: ${i.message}`)
      throw new InferenceError(400, `not a Lambda infer event: ${issues.join('; ')}`)
    }
    const { model_name: model, model_version: version, ...request } = parsed.data
    const settings = readSettings()
    const arrived = performance.now()
    const served = await lambdaManager().resolve(model, version)
    const limits = { maxRows: settings.MAX_REQUEST_ROWS, maxElements: settings.MAX_BODY_BYTES }
    const { answer } = await serveInfer(served, request, { limits, arrived })
    return inferResponse(served.model, String(served.version), answer)
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
