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
}

/**
 * One JSON line per request: who (the key's name, never the key), what was served, how long it
 * took, and how much of the input had to be fixed — per-key normalization counts are how a
 * client's encoding bug becomes visible (Workers Logs / Logpush turn these lines into metrics).
 */
export const requestLog = ({ write = (line) => console.log(line) }: RequestLogOptions = {}): Stage<Logged> =>
  async function requestLog(c, next) {
    const started = Date.now()
    try {
      await next()
    } finally {
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
  }
