export interface WebhookOptions {
  url: string
  /** Deliveries tried in all, the first included. */
  attempts?: number
  /** Wait before the second attempt; doubled before each further one. */
  backoffMs?: number
  /** Per attempt: a receiver that hangs must not hold the worker's waitUntil open. */
  timeoutMs?: number
  fetch?: (url: string, init: RequestInit) => Promise<Response>
  sleep?: (ms: number) => Promise<void>
  log?: (line: string) => void
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

// Other 4xx answers are the receiver refusing this payload: sending it again changes nothing.
const retryable = (status: number) => status >= 500 || status === 408 || status === 429

/**
 * Posts payloads as JSON to `url`, retrying network failures, timeouts, 5xx, 408 and 429 with
 * exponential backoff. The returned function resolves true once delivered and false when it gave
 * up (logged): it never rejects, so a dead receiver cannot fail the controller.
 */
export const createWebhook = ({
  url,
  attempts = 4,
  backoffMs = 500,
  timeoutMs = 5_000,
  // Called as a plain function: Workers refuse a fetch invoked with a foreign `this`.
  fetch: send = (input, init) => fetch(input, init),
  sleep = wait,
  log = console.log,
}: WebhookOptions) =>
  async function postWebhook(payload: unknown): Promise<boolean> {
    const body = JSON.stringify(payload)
    let failure = ''
    let tried = 0
    while (tried < attempts) {
      if (tried > 0) await sleep(backoffMs * 2 ** (tried - 1))
      tried++
      try {
        const res = await send(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(timeoutMs) })
        await res.body?.cancel()
        if (res.ok) return true
        failure = `HTTP ${res.status}`
        if (!retryable(res.status)) break
      } catch (error) {
        failure = error instanceof Error ? error.message : String(error)
      }
    }
    // The receiver's address may carry a token: the log names the failure, not the URL.
    log(JSON.stringify({ level: 'warn', msg: 'alert webhook failed', attempts: tried, error: failure }))
    return false
  }
