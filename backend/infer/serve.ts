import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { Span } from '@opentelemetry/api'
import { parseDeadlineMs } from '../../shared/headers.ts'
import { InferenceError, badRequest } from '../errors.ts'
import type { ModelVersion } from '../loader/model-version.ts'
import type { BinaryData } from './binary.ts'
import { parseInferRequest, type ParseLimits } from './request.ts'
import type { InferAnswer } from './response.ts'

const MAX_DEADLINE_MS = 3_600_000

export interface ServeOptions {
  limits: ParseLimits
  /** performance.now() time the request arrived: its latency is counted from here. */
  arrived: number
  /**
   * The client's X-Request-Deadline-Ms, if any: the request must start running by then, else
   * by the model's default timeout. Parsed inside the counted request, so a malformed deadline
   * counts as this version's failed request.
   */
  deadlineHeader?: string
  /** The client's X-Request-Id: the response id when the body names none and it is plain enough to echo. */
  requestIdHeader?: string
  /** The request's span when it is traced: its queue time and batch hang off it. */
  span?: Span
  /** The tensor bytes after the JSON header of a binary request (the binary tensor data extension). */
  binary?: BinaryData
}

export interface Served {
  /** Encoded by the caller: the version's ResponseTemplate for HTTP, inferResponse for the Lambda tier. */
  answer: InferAnswer
  rows: number
}

/**
 * One infer request through a served version: check, queue, answer with this request's rows,
 * and count it (version stats, drift health, Prometheus) the same way on every tier.
 */
export const serveInfer = async (served: ModelVersion, body: unknown, options: ServeOptions): Promise<Served> => {
  const series = served.requestSeries
  try {
    const { answer, rows, queueUs } = await run(served, body, options)
    const us = (performance.now() - options.arrived) * 1000
    served.stats.request(true, rows, us, queueUs)
    served.drift?.request(us, rows, false)
    if (series) {
      series.ok()
      series.duration(us / 1e6)
    }
    return { answer, rows }
  } catch (err) {
    const status = err instanceof InferenceError ? err.status : 500
    const us = (performance.now() - options.arrived) * 1000
    served.stats.request(false, 0, us, 0)
    // Faults of the version (execution errors, deadline expiry), not refusals or bad input. A
    // request that expired at the deadline its caller sent is the caller's to count: the edge gives
    // up at that same deadline and counts every call it got no answer or this 504 for, so counting
    // it here too would count one failure twice in the arm the rollout controller judges.
    const callersDeadline = err instanceof InferenceError && err.reason === 'expired' && options.deadlineHeader !== undefined
    if (!callersDeadline) served.drift?.request(us, 0, status === 500 || status === 504)
    series?.status(String(status))
    if (status === 400) series?.invalid()
    throw err
  }
}

/** The deadline as performance.now() time: the header first, else the model's default. */
const deadlineOf = (header: string | undefined, arrived: number, defaultMs: number | undefined): number | undefined => {
  if (header === undefined) return defaultMs === undefined ? undefined : arrived + defaultMs
  const ms = parseDeadlineMs(header, MAX_DEADLINE_MS)
  if (typeof ms !== 'number') throw badRequest(ms.invalid)
  return arrived + ms
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

const run = async (served: ModelVersion, body: unknown, options: ServeOptions): Promise<Served & { queueUs: number }> => {
  const deadline = deadlineOf(options.deadlineHeader, options.arrived, served.defaultTimeoutMs)
  const request = parseInferRequest(body, served.config, options.limits, options.binary)
  const { drift } = served
  // Drift counts every served row's prediction, so the run computes it even when the client asked for other outputs.
  const outputs = drift && !request.outputs.includes(drift.output) ? [...request.outputs, drift.output] : request.outputs
  const result = await served.submit({ inputs: request.inputs, rows: request.rows, outputs, deadline, span: options.span })
  drift?.record(request.inputs, request.rows, result.outputs)
  const { requestIdHeader } = options
  const answer: InferAnswer = {
    id: request.id ?? (requestIdHeader !== undefined && SAFE_REQUEST_ID.test(requestIdHeader) ? requestIdHeader : randomUUID()),
    parameters: {
      queue_us: result.queueUs,
      compute_us: result.computeUs,
      batch_size: result.batchSize,
      batch_reason: result.batchReason,
    },
    outputs: request.outputs.map((name) => ({ name, tensor: result.outputs[name] })),
  }
  return { answer, rows: request.rows, queueUs: result.queueUs }
}
