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
