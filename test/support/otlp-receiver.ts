import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One span as an OTLP/HTTP JSON export carries it, flattened with its resource's service name. */
export interface ReceivedSpan {
  service: string
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  attributes: Record<string, string | number | boolean>
  links: Array<{ traceId: string; spanId: string }>
}

interface OtlpValue { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean }
interface OtlpAttribute { key: string; value: OtlpValue }
interface OtlpSpan { traceId: string; spanId: string; parentSpanId?: string; name: string; attributes?: OtlpAttribute[]; links?: Array<{ traceId: string; spanId: string }> }
interface OtlpExport { resourceSpans?: Array<{ resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> }

const valueOf = (v: OtlpValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? ''

const attributesOf = (list: OtlpAttribute[] = []): ReceivedSpan['attributes'] => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]))

/**
 * A local OTLP/HTTP receiver (JSON encoding, `POST /v1/traces`) that records every span it is sent:
 * the collector the tracing tests export to. Anything else gets a 404; a body that is not an
 * OTLP JSON export a 400, and is recorded in `refused` so a test can see a malformed export.
 */
export interface OtlpReceiver {
  /** Base URL, for `OTEL_EXPORTER_OTLP_ENDPOINT` (exporters append `/v1/traces`). */
  url: string
  spans: ReceivedSpan[]
  refused: string[]
  /** Resolves once `predicate` holds over the spans received so far (checked on each export), or rejects after `timeoutMs`. */
  until(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>
  close(): Promise<void>
}

export const startOtlpReceiver = async (): Promise<OtlpReceiver> => {
  const spans: ReceivedSpan[] = []
  const refused: string[] = []
  const waiters = new Set<() => void>()
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end()
        return
      }
      const body = Buffer.concat(chunks).toString('utf8')
      let parsed: OtlpExport
      try {
        parsed = JSON.parse(body) as OtlpExport
        if (!Array.isArray(parsed.resourceSpans)) throw new Error('no resourceSpans')
      } catch (err) {
        refused.push(`${req.headers['content-type'] ?? ''}: ${(err as Error).message}`)
        res.writeHead(400).end()
        return
      }
      for (const rs of parsed.resourceSpans ?? []) {
        const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '')
        for (const scope of rs.scopeSpans ?? []) {
          for (const s of scope.spans ?? []) {
            spans.push({
              service, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name,
              attributes: attributesOf(s.attributes), links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
            })
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      for (const wake of waiters) wake()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    refused,
    until(predicate, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(spans)) return
          clearTimeout(timer)
          waiters.delete(check)
          resolve(spans)
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`OTLP receiver: condition not met within ${timeoutMs} ms; ${spans.length} spans: ${spans.map((s) => `${s.service}/${s.name}`).join(', ')}`))
        }, timeoutMs)
        waiters.add(check)
        check()
      })
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
