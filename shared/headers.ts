/** Header names both tiers agree on. */
export const HEADERS = {
  requestId: 'x-request-id',
  deadlineMs: 'x-request-deadline-ms',
  modelVersion: 'x-model-version',
  variant: 'x-variant',
  traceparent: 'traceparent',
  retryAfter: 'retry-after',
  serverTiming: 'server-timing',
} as const

/**
 * X-Request-Deadline-Ms as both tiers read it: whole milliseconds from 1 to `max`. Returns the
 * value, or a complaint for the caller to refuse with.
 */
export const parseDeadlineMs = (header: string, max: number): number | { invalid: string } =>
  /^[1-9][0-9]{0,6}$/.test(header.trim()) && Number(header) <= max
    ? Number(header)
    : { invalid: `${HEADERS.deadlineMs} must be a whole number of milliseconds between 1 and ${max}` }
