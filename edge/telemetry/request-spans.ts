import { type Context, type Span, trace } from '@opentelemetry/api'
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace'

/** The spans of one request: those still open, and those finished, waiting for the request's export. */
interface RequestSpans {
  open: number
  finished: ReadableSpan[]
  /** Wakes `take` when the last open span ends. */
  settled?: () => void
  taken: boolean
}

/**
 * Keeps each request's finished spans together until the request's export takes them. A span
 * belongs to the request of its parent, or starts a request of its own when its parent is not
 * one of ours (the caller's remote span, or none). Nothing is shared between requests, so a
 * request's export never waits on, or resolves a promise of, another request (Workers tie
 * promises to the request that made them).
 */
export class RequestSpanProcessor implements SpanProcessor {
  private readonly requests = new WeakMap<object, RequestSpans>()
  /** Spans that ended after their request's export had taken its spans: not exported. */
  late = 0

  onStart(span: Span, parentContext: Context): void {
    const parent = trace.getSpan(parentContext)
    const request = (parent && this.requests.get(parent)) || { open: 0, finished: [], taken: false }
    request.open++
    this.requests.set(span, request)
  }

  onEnd(span: ReadableSpan): void {
    const request = this.requests.get(span)
    if (request === undefined) return
    if (request.taken) {
      this.late++
      return
    }
    request.finished.push(span)
    if (--request.open === 0) request.settled?.()
  }

  /**
   * The finished spans of `root`'s request, once every one of them has ended or `maxWaitMs` has
   * passed (work the request left running, such as a shadow call, ends after the response).
   * Taken once: a second call, or a span that ends later, gets nothing.
   */
  async take(root: Span, maxWaitMs: number): Promise<ReadableSpan[]> {
    const request = this.requests.get(root)
    if (request === undefined || request.taken) return []
    if (request.open > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, maxWaitMs)
        request.settled = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
    request.taken = true
    const spans = request.finished
    request.finished = []
    return spans
  }

  async forceFlush(): Promise<void> {}

  async shutdown(): Promise<void> {}
}
