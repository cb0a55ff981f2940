import type { InferResponse } from '../../shared/protocol.ts'
import { Problem } from '../problem.ts'
import { BackendRefusal, Unanswered, deadlinePassed } from './http.ts'
import type { BackendModelMetadata, InferCall, Transport } from './transport.ts'

/** Which tier answered an infer call, as `parameters.served_by` of the response says. */
export type ServedBy = 'backend' | 'lambda'

export const SERVED_BY_PARAMETER = 'served_by'

/** The response header that tells the client (and the request metrics) which tier served it. */
export const SERVED_BY_HEADER = 'x-served-by'

/** The tier that served `response`: the backend unless the answer says Lambda. */
export const servedBy = (response: InferResponse): ServedBy => (response.parameters?.[SERVED_BY_PARAMETER] === 'lambda' ? 'lambda' : 'backend')

export interface FallbackTransportOptions {
  /** Most model descriptions kept for answering metadata while the primary is down. */
  maxStaleModels?: number
  /**
   * Share of what remains of a call's deadline held back from the primary for the fallback.
   * Without it a slow 503 and its retry can spend the whole budget and the fallback is never
   * tried; a quarter leaves most of it to the primary, which answers nearly every call.
   */
  fallbackShare?: number
  now?: () => number
}

/**
 * The primary refused for lack of capacity (429), availability (503: down, unreachable, circuit
 * open) or time (504: its share of the deadline is spent, the fallback's is not).
 */
const fallsBack = (err: unknown): err is BackendRefusal => err instanceof BackendRefusal && (err.status === 429 || err.status === 503 || err.status === 504)

const mark = (response: InferResponse, by: ServedBy): InferResponse => ({ ...response, parameters: { ...response.parameters, [SERVED_BY_PARAMETER]: by } })

/**
 * The primary tier (HTTP to the GPU backend) with a fallback tier (Lambda CPU) for when the
 * primary refuses with 429 or 503 — saturated, down, unreachable or circuit open — or runs out of
 * time. The primary gets the call's deadline less `fallbackShare` of it; the fallback gets what
 * is left when the primary gives up. Shadow copies never go to the fallback.
 *
 * Which tier answered travels with the answer, not with the transport (one transport serves
 * every concurrent request of the isolate): each response is a fresh object whose
 * `parameters.served_by` is `"backend"` or `"lambda"`.
 *
 * Metadata always comes from the primary. While the primary is down, the last description it
 * gave for a model is served again (stale-if-error), so the catalog can keep validating and the
 * Lambda tier keep answering after the catalog's TTL has run out.
 */
export class FallbackTransport implements Transport {
  readonly name: string
  private readonly stale = new Map<string, BackendModelMetadata>()
  private readonly maxStaleModels: number
  private readonly fallbackShare: number
  private readonly now: () => number

  constructor(
    readonly primary: Transport,
    readonly fallback: Transport | undefined,
    { maxStaleModels = 256, fallbackShare = 0.25, now = Date.now }: FallbackTransportOptions = {},
  ) {
    this.name = fallback ? `${primary.name}+${fallback.name}` : primary.name
    this.maxStaleModels = maxStaleModels
    this.fallbackShare = fallbackShare
    this.now = now
  }

  async infer(call: InferCall): Promise<InferResponse> {
    // A shadow compares the backend's versions; on the fallback it would spend the capacity client traffic falls back on.
    if (!this.fallback || call.shadow) return mark(await this.primary.infer(call), 'backend')
    const reservedMs = Math.max(0, call.deadlineAt - this.now()) * this.fallbackShare
    let refusal: BackendRefusal
    try {
      return mark(await this.primary.infer({ ...call, deadlineAt: call.deadlineAt - reservedMs }), 'backend')
    } catch (err) {
      if (!fallsBack(err)) throw err
      refusal = err
    }
    if (call.deadlineAt - this.now() < 1) throw deadlinePassed('inference tier')
    try {
      return mark(await this.fallback.infer(call), 'lambda')
    } catch (err) {
      // A verdict on the request itself (unknown model, bad input) or a spent deadline stands.
      if (err instanceof Problem && (err.status === 504 || (err.status < 500 && err.status !== 429))) throw err
      const why = err instanceof Problem ? err.detail : 'unexpected error'
      // Still unanswered when the primary never answered: the backend's own counts do not hold the call.
      const Refusal = refusal instanceof Unanswered ? Unanswered : BackendRefusal
      throw new Refusal(refusal.status as 429 | 503 | 504, `${refusal.detail}; the fallback tier failed too: ${why}`, refusal.extra.headers?.['retry-after'])
    }
  }

  models(requestId: string, deadlineAt?: number): Promise<string[]> {
    return this.primary.models(requestId, deadlineAt)
  }

  async metadata(model: string, requestId: string, deadlineAt?: number): Promise<BackendModelMetadata> {
    try {
      const metadata = await this.primary.metadata(model, requestId, deadlineAt)
      this.stale.delete(model)
      this.stale.set(model, metadata)
      if (this.stale.size > this.maxStaleModels) this.stale.delete(this.stale.keys().next().value!)
      return metadata
    } catch (err) {
      const stale = this.stale.get(model)
      // Any refusal (429, 503, 504): the primary could not answer, not that the model is gone.
      if (this.fallback && stale && err instanceof BackendRefusal) return stale
      if (err instanceof Problem && err.status === 404) this.stale.delete(model)
      throw err
    }
  }
}
