import { resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { lambdaInferEvent, type LambdaErrorResult } from '../shared/lambda.ts'
import type { InferResponse } from '../shared/protocol.ts'
import { InferenceError } from './errors.ts'
import { LambdaTelemetry, type LambdaContext } from './lambda/telemetry.ts'
import { ATTR } from './monitor/tracing/spans.ts'
import { serveInfer } from './infer/serve.ts'
import { inferResponse } from './infer/response.ts'
import { ModelManager } from './loader/model-manager.ts'
import { createLogger } from './logger.ts'
import { Repository } from './repository/repository.ts'
import { readSettings } from './settings.ts'

let manager: ModelManager | undefined
let telemetry: LambdaTelemetry | undefined

/** The container's model manager: created on first invoke and reused while the container is warm. */
export const lambdaManager = (): ModelManager => {
  if (!manager) {
    const settings = readSettings()
    const logger = createLogger(settings.LOG_LEVEL)
    telemetry = new LambdaTelemetry(settings, logger)
    const { drift } = telemetry
    manager = new ModelManager(new Repository(resolve(settings.MODEL_REPOSITORY)), {
      batching: false,
      placement: settings.EXECUTOR_PLACEMENT,
      mainThreadMaxUs: settings.EXECUTOR_MAIN_THREAD_MAX_US,
      memoryBudgetBytes: settings.MODEL_MEMORY_BUDGET_MB * 1024 * 1024,
      logger,
      ...(drift ? { drift } : {}),
    })
  }
  return manager
}

/** The container's drift counting and tracing (backend/lambda/telemetry.ts), made with its manager. */
const lambdaTelemetry = (): LambdaTelemetry => {
  lambdaManager()
  return telemetry!
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

/**
 * The CPU fallback tier: same repository, validation and executor as the server, batching off.
 * Each request is counted into the same drift counts as on the HTTP tier, into the HTTP tier's
 * request and batch series (pushed over OTLP, `served_by=lambda`) and, when tracing is on, is a
 * `backend.infer` span (`edge_infer.served_by=lambda`) under the edge's traceparent from the
 * ClientContext; all are flushed before the answer is returned (a frozen instance runs no timers).
 */
export const handler = async (event: unknown, context?: LambdaContext): Promise<InferResponse | LambdaErrorResult> => {
  const tier = lambdaTelemetry()
  const invocation = await tier.startInvoke(context)
  let status = 200
  let version: string | undefined
  let errorType: string | undefined
  try {
    const parsed = lambdaInferEvent.safeParse(event)
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(payload)'}: ${i.message}`)
      throw new InferenceError(400, `not a Lambda infer event: ${issues.join('; ')}`)
    }
    const { model_name: model, model_version: asked, ...request } = parsed.data
    invocation.span?.setAttribute(ATTR.model, model)
    version = asked
    const settings = readSettings()
    const arrived = performance.now()
    const served = await lambdaManager().resolve(model, asked)
    version = String(served.version)
    const limits = { maxRows: settings.MAX_REQUEST_ROWS, maxElements: settings.MAX_BODY_BYTES }
    const servedVersion = version
    const { answer } = await serveInfer(served, request, { limits, arrived, ...(invocation.span ? { span: invocation.span } : {}) }).catch((err: unknown) => {
      invocation.metrics.failed(model, servedVersion, err instanceof InferenceError ? err.status : 500)
      throw err
    })
    invocation.metrics.answered(model, version, (performance.now() - arrived) / 1000, answer)
    return inferResponse(served.model, version, answer)
  } catch (err) {
    status = err instanceof InferenceError ? err.status : 500
    errorType = err instanceof InferenceError ? undefined : err instanceof Error ? err.name : 'Error'
    if (err instanceof InferenceError) return { error: err.message, status: err.status }
    throw err
  } finally {
    invocation.end({ status, version, errorType })
    await tier.flush()
  }
}

/** Releases the sessions (tests, and a container's SIGTERM). */
export const shutdownLambda = async (): Promise<void> => {
  await manager?.shutdown()
  await telemetry?.shutdown()
  manager = undefined
  telemetry = undefined
}
