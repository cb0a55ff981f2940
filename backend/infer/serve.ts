import { performance } from 'node:perf_hooks'
import type { Span } from '@opentelemetry/api'
import type { InferResponse } from '../../shared/protocol.ts'
import { InferenceError } from '../errors.ts'
import { toJsonData } from '../executor/tensor.ts'
import type { ModelVersion } from '../loader/model-version.ts'
import type { Metrics } from '../monitor/metrics.ts'
import { parseInferRequest, type ParseLimits } from './request.ts'

export interface ServeOptions {
  limits: ParseLimits
  /** performance.now() time the request arrived: its latency is counted from here. */
  arrived: number
  /**
   * performance.now() time by which the request must start running. Read inside the counted
   * request, so a malformed deadline counts as this version's failed request.
   */
  deadline?: () => number | undefined
  /** Response id when the request names none. */
  fallbackId: () => string
  /** Where the tier exports Prometheus metrics; the request counters go there too. */
  metrics?: Metrics
  /** The request's span when it is traced: its queue time and batch hang off it. */
  span?: Span
}

export interface Served {
  response: InferResponse
  rows: number
}

/**
 * One infer request through a served version: check, queue, answer with this request's rows,
 * and count it (version stats, drift health, Prometheus) the same way on every tier.
 */
export const serveInfer = async (served: ModelVersion, body: unknown, options: ServeOptions): Promise<Served> => {
  const { metrics } = options
  const labels = { model: served.model, version: String(served.version) }
  const latencyUs = () => (performance.now() - options.arrived) * 1000
  try {
    const { response, rows, queueUs } = await run(served, body, options)
    const us = latencyUs()
    served.stats.request(true, rows, us, queueUs)
    served.drift?.request(us, rows, false)
    metrics?.requests.inc({ ...labels, status: '200' })
    metrics?.requestDuration.observe(labels, us / 1e6)
    return { response, rows }
  } catch (err) {
    const status = err instanceof InferenceError ? err.status : 500
    const us = latencyUs()
    served.stats.request(false, 0, us, 0)
    // Faults of the version (execution errors, deadline expiry), not refusals or bad input.
    served.drift?.request(us, 0, status === 500 || status === 504)
    metrics?.requests.inc({ ...labels, status: String(status) })
    if (status === 400) metrics?.rejected.inc({ model: served.model, reason: 'invalid_request' })
    throw err
  }
}

const run = async (served: ModelVersion, body: unknown, options: ServeOptions): Promise<Served & { queueUs: number }> => {
  const deadline = options.deadline?.()
  const request = parseInferRequest(body, served.config, options.limits)
  const { drift } = served
  // Drift counts every served row's prediction, so the run computes it even when the client asked for other outputs.
  const outputs = drift && !request.outputs.includes(drift.output) ? [...request.outputs, drift.output] : request.outputs
  const result = await served.submit({ inputs: request.inputs, rows: request.rows, outputs, deadline, span: options.span })
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
