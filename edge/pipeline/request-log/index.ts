import { CLIENT_CLOSED_REQUEST } from '../../problem.ts'
import type { AuthVariables } from '../auth/index.ts'
import type { EnrichVariables } from '../enrich/index.ts'
import type { ModelVariables } from '../model/index.ts'
import type { NormalizeVariables } from '../normalize/index.ts'
import type { RequestIdVariables } from '../request-id/index.ts'
import type { RouteVariables } from '../route/index.ts'
import type { Stage } from '../stage.ts'
import type { TraceVariables } from '../trace/spans.ts'

/** What the line reports: set by the stages after this one, when the request got that far. */
type Logged = Partial<RequestIdVariables & TraceVariables & AuthVariables & ModelVariables & NormalizeVariables & EnrichVariables & RouteVariables>

export interface RequestLogOptions {
  write?: (line: string) => void
  /** Draws in [0, 1) for sampling plain successes. */
  random?: () => number
}

/** A request worth its line whatever the sample: refused, failed, fixed up, or served on defaults. */
const unusual = (status: number, fixes: number | undefined, degraded: boolean | undefined): boolean => status >= 400 || (fixes ?? 0) > 0 || degraded === true

/**
 * One JSON line per request worth one: who (the key's name, never the key), what was served, how
 * long it took, and how much of the input had to be fixed — per-key normalization counts are how a
 * client's encoding bug becomes visible (Workers Logs / Logpush turn these lines into metrics).
 * Every refusal, failure, fixed-up or degraded request is logged; plain successes are sampled at
 * the isolate's `requestLogSampleRate` (Workers Logs records every invocation anyway, and a line
 * costs CPU on every predict).
 */
type Needs = Logged & { isolate: { settings: { requestLogSampleRate: number } } }

export const requestLog = ({ write = (line) => console.log(line), random = Math.random }: RequestLogOptions = {}): Stage<Needs> =>
  async function requestLog(c, next) {
    const started = Date.now()
    try {
      await next()
    } finally {
      const fixes = c.get('normalizedFixes')
      const degraded = c.get('featuresDegraded')
      const rate = c.get('isolate').settings.requestLogSampleRate
      if (unusual(c.res.status, fixes, degraded) || (rate > 0 && random() < rate)) logLine(c, started, write)
    }
  }

const logLine = (c: Parameters<Stage<Needs>>[0], started: number, write: (line: string) => void): void => {
  const assignment = c.get('assignment')
  // JSON.stringify leaves out undefined fields: an unrouted request's line has no model.
  write(JSON.stringify({
    // A client that went away is worth a look, but it is neither a success nor the edge's error.
    level: c.res.status === CLIENT_CLOSED_REQUEST ? 'warn' : 'info',
    msg: 'request',
    request_id: c.get('requestId'),
    trace_id: c.get('traceparent')?.slice(3, 35),
    method: c.req.method,
    path: c.req.path,
    status: c.res.status,
    duration_ms: Date.now() - started,
    caller: c.get('caller')?.name,
    model: assignment && c.get('model')?.name,
    version: assignment?.version,
    variant: assignment?.variant,
    normalized_fixes: c.get('normalizedFixes'),
    features_degraded: c.get('featuresDegraded'),
  }))
}
