import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { parseWrkOutput, runWrk } from '../../../load/harness/wrk.ts'

/** What wrk 4.1 printed for a 1 s run with the benchmark's script: its own summary, then the done hook's line. */
const CAPTURED = `Running 1s test @ http://127.0.0.1:40111/v2/models/credit-risk/infer
  1 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   421.35us  212.11us   6.92ms   91.20%
    Req/Sec    18.77k     1.02k   19.71k    80.00%
  18790 requests in 1.00s, 6.04MB read
  Non-2xx or 3xx responses: 12
Requests/sec:  18771.23
Transfer/sec:      6.03MB
WRK_RESULT {"duration_us":1001000,"requests":18790,"status_errors":12,"connect_errors":0,"read_errors":2,"write_errors":1,"timeouts":3,"p50_us":388.0,"p99_us":1204.5,"mean_us":421.4}
`

describe('parseWrkOutput', () => {
  it('reads the done hook\'s line, not wrk\'s summary, into the benchmark\'s load result', () => {
    expect(parseWrkOutput(CAPTURED)).toEqual({
      reqPerSec: 18790 / 1.001,
      ok: 18790 - 12,
      completed: 18790,
      p50Ms: 0.388,
      p99Ms: 1.2045,
      non2xx: 12,
      errors: 3,
      timeouts: 3,
    })
  })

  it('refuses output without a result line, or a run of no duration', () => {
    expect(() => parseWrkOutput('Running 1s test @ http://x\n')).toThrow(/no result line/)
    expect(() => parseWrkOutput('WRK_RESULT {"duration_us":0,"requests":0}\n')).toThrow(/ran for 0/)
  })
})

describe('runWrk', () => {
  let server: Server | undefined
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())))

  it('POSTs the body as JSON on every request and counts refusals apart from answers', async () => {
    const body = JSON.stringify({ id: 'bench', inputs: [{ name: 'features', shape: [1, 3], datatype: 'FP32', data: [0.25, 1, -2] }] })
    const seen = { requests: 0, wrong: 0, refused: 0 }
    server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        seen.requests++
        if (req.method !== 'POST' || req.url !== '/v2/models/m/infer' || req.headers['content-type'] !== 'application/json' || Buffer.concat(chunks).toString() !== body) seen.wrong++
        // Every fifth request refused, as a server shedding load would.
        const refuse = seen.requests % 5 === 0
        if (refuse) seen.refused++
        res.writeHead(refuse ? 429 : 200, { 'content-type': 'application/json' }).end('{"ok":true}')
      })
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const result = await runWrk({ url: `http://127.0.0.1:${port}/v2/models/m/infer`, body, connections: 2, durationS: 1 })
    expect(seen.wrong).toBe(0)
    expect(result.completed).toBeGreaterThan(0)
    // wrk counts what it read back before it stopped; the server may have answered a few more.
    expect(result.completed).toBeLessThanOrEqual(seen.requests)
    expect(result.non2xx).toBeGreaterThan(0)
    expect(result.non2xx).toBeLessThanOrEqual(seen.refused)
    expect(result.ok + result.non2xx).toBe(result.completed)
    expect(result.errors).toBe(0)
    expect(result.p50Ms).toBeGreaterThan(0)
    expect(result.p99Ms).toBeGreaterThanOrEqual(result.p50Ms)
  })
})
