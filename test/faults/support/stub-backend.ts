import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { DEMO_REPOSITORY } from '../../backend/support/fixture-repository.ts'

/** What the stub saw of one request: its path, the deadline it was given, and how it ended. */
export interface SeenRequest {
  method: string
  path: string
  /** The X-Request-Deadline-Ms the edge sent, when it sent one. */
  deadlineMs?: number
  /** The caller closed the connection before any answer (the edge gave up or aborted the call). */
  abandoned: boolean
}

export interface StubBackend {
  url: string
  seen: SeenRequest[]
  close(): Promise<void>
}

/** How the stub treats a request: an answer (a value to write as JSON, or JSON text as it is), or `stall` (accept and never answer). */
export type StubAnswer = { status: number; body: unknown } | { status: number; text: string } | 'stall'

/**
 * A real HTTP server standing in for the backend where a test needs what the real one never
 * does on cue: accept and never answer, or answer one path only, on `port` (any free one by
 * default). Stalled requests are held until their caller gives up, and that is recorded.
 */
export const startStubBackend = async (answer: (method: string, path: string) => StubAnswer, port = 0): Promise<StubBackend> => {
  const seen: SeenRequest[] = []
  const held = new Set<ServerResponse>()
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const deadline = req.headers['x-request-deadline-ms']
    const entry: SeenRequest = { method: req.method ?? 'GET', path: req.url ?? '/', abandoned: false, ...(typeof deadline === 'string' ? { deadlineMs: Number(deadline) } : {}) }
    seen.push(entry)
    res.once('close', () => (entry.abandoned = !res.writableFinished))
    req.resume()
    const outcome = answer(entry.method, entry.path)
    if (outcome === 'stall') {
      held.add(res)
      return
    }
    res.writeHead(outcome.status, { 'content-type': 'application/json' }).end('text' in outcome ? outcome.text : JSON.stringify(outcome.body))
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      for (const res of held) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

const demoConfig = JSON.parse(readFileSync(join(DEMO_REPOSITORY, 'credit-risk', 'config.json'), 'utf8')) as Record<string, unknown>

/** The metadata the real backend serves for the demo model under `name`, serving `versions`. */
export const demoMetadata = (name: string, versions: readonly number[]) => ({
  name,
  versions: versions.map(String),
  platform: 'onnxruntime',
  inputs: demoConfig.inputs,
  outputs: demoConfig.outputs,
  features: demoConfig.features,
  postprocess: demoConfig.postprocess,
})
