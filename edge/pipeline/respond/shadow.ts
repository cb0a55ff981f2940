import { Problem } from '../../problem.ts'
import type { InferCall, Transport } from '../../backend-client/transport.ts'
import type { PredictableModel } from '../../backend-client/catalog.ts'
import type { RequestMetrics } from '../../stores/tallies/tally.ts'
import { type Prediction, predictionsOf } from './predictions.ts'

export type ShadowParts = { transport: Transport; requestMetrics: RequestMetrics }

/**
 * Row by row: whether the shadow's label is the served one, and |Δp|, the shadow's probability of
 * the label it chose against the served probability of that same label.
 */
export const compareRows = (served: readonly Prediction[], shadowed: readonly Prediction[]): { agreeing: number; diffs: number[] } => ({
  agreeing: shadowed.filter((p, i) => p.label === served[i].label).length,
  diffs: shadowed.map((p, i) => Math.abs(p.probability - served[i].scores[p.label])),
})

/**
 * Sends the same rows to the shadow version, counts how its answer compares with what the client
 * got (rows, agreeing rows, |Δp| histogram per model, served and shadow version), and counts the
 * call (variant "shadow") with its own outcome and duration. The shadow's answer never reaches
 * the client, and its failure never fails the request.
 */
export const compareWithShadow = async ({ transport, requestMetrics }: ShadowParts, call: InferCall, served: Prediction[], model: PredictableModel, servedVersion: number): Promise<void> => {
  const base = { msg: 'shadow', model: model.name, version: servedVersion, shadow_version: call.version, request_id: call.requestId }
  const sent = Date.now()
  let code = 200
  try {
    const { agreeing, diffs } = compareRows(served, predictionsOf(await transport.infer(call), model, served.length))
    requestMetrics.shadowCompared({ model: model.name, servedVersion, shadowVersion: call.version, agreeing, diffs })
    console.log(JSON.stringify({ level: 'info', ...base, rows: served.length, agreement: agreeing / served.length, max_probability_diff: Math.max(...diffs) }))
  } catch (err) {
    code = err instanceof Problem ? err.status : 500
    console.log(JSON.stringify({ level: 'warn', ...base, error: err instanceof Error ? err.message : String(err) }))
  }
  // Shadows never go to the fallback tier: an answer is the backend's, a failure the edge's to report.
  requestMetrics.request({ model: model.name, version: String(call.version), variant: 'shadow', code, servedBy: code === 200 ? 'backend' : 'edge', seconds: (Date.now() - sent) / 1e3 })
  await requestMetrics.flushDue()
}
