import * as z from 'zod'
import { controllerDriftReport } from '../../shared/drift/report.ts'
import { HEADERS } from '../../shared/headers.ts'
import { backendError, tierRefusal } from '../backend-client/http.ts'
import { Problem } from '../problem.ts'
import type { ArmWindow, MonitorSource } from './monitor-source.ts'

export interface BackendMonitorOptions {
  baseUrl: string
  /** The backend's `INFER_TOKEN`, sent as a bearer token. */
  token?: string
  /** Per report; the controller has a minute and several models to look at. */
  timeoutMs?: number
  fetch?: typeof fetch
}

/**
 * The rows the backend computed (its health figures). The report's `rows` also holds the rows the
 * edge answered from its prediction cache (docs/prediction-cache.md); the minimum-rows gate counts
 * computed rows, so that a heavily cached canary is not stepped on less evidence of its own.
 */
const computedRows = z.object({ health: z.object({ rows: z.number().nonnegative() }) })

/**
 * Reads the backend's drift reports: whole, for the admin drift route, and as the numbers of one
 * arm, for the rollout controller. The backend merges every replica's counts (Redis), so one
 * request sees all of a version's traffic.
 */
export class BackendMonitor implements MonitorSource {
  private readonly baseUrl: string
  private readonly authorization: Record<string, string>
  private readonly timeoutMs: number
  private readonly fetcher: typeof fetch

  // workerd refuses `fetch` called with another `this` ("Illegal invocation"): never store it bare.
  constructor({ baseUrl, token, timeoutMs = 5_000, fetch: fetcher = (input, init) => fetch(input, init) }: BackendMonitorOptions) {
    this.baseUrl = baseUrl.replace(/\/+$/, '')
    this.authorization = token ? { authorization: `Bearer ${token}` } : {}
    this.timeoutMs = timeoutMs
    this.fetcher = fetcher
  }

  /** The backend's drift report as it sent it; refusals keep their meaning (404, 400, 503). */
  async report(model: string, version: number, window: string, requestId: string): Promise<unknown> {
    const url = `${this.baseUrl}/v2/models/${encodeURIComponent(model)}/versions/${version}/drift?window=${encodeURIComponent(window)}`
    let res: Response
    try {
      res = await this.fetcher(url, { headers: { [HEADERS.requestId]: requestId, ...this.authorization }, signal: AbortSignal.timeout(this.timeoutMs) })
    } catch (err) {
      throw new Problem(503, 'Service Unavailable', `the inference tier's monitor did not answer: ${err instanceof Error ? err.message : String(err)}`, {
        slug: 'monitor-unavailable',
        headers: { 'retry-after': '5' },
      })
    }
    if (res.status === 400) throw new Problem(400, 'Bad Request', `monitor: ${await backendError(res)}`, { slug: 'invalid-window' })
    if (!res.ok) throw tierRefusal('monitor', res.status, await backendError(res), res.headers.get('retry-after') ?? undefined)
    return res.json()
  }

  async arm(model: string, version: number, windowMinutes: number): Promise<ArmWindow> {
    const report = await this.report(model, version, `${windowMinutes}m`, `controller-${model}-${version}`)
    const parsed = controllerDriftReport.safeParse(report)
    if (!parsed.success) throw new Error(`the drift report of ${model} v${version} is not what the controller reads: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
    const { rows, dataset, prediction, health } = parsed.data
    const computed = computedRows.safeParse(report)
    return {
      version,
      rows: computed.success ? computed.data.health.rows : rows,
      requests: health.requests,
      errors: health.errors,
      nan_outputs: prediction.nan_outputs,
      p95_ms: health.p95_ms ?? 0,
      prediction_counts: prediction.counts,
      input_drift: dataset.verdict,
    }
  }
}
