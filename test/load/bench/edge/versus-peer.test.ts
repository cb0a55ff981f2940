import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundledWorkerOptions } from '../../../../dev/workerd.ts'
import { cleanUp } from '../../../../load/harness/processes.ts'
import { startServer, waitReady, type ServerProcess } from '../../../../load/harness/servers.ts'
import { bundleWorker } from '../../../../load/bench/edge/bundle.ts'
import { INFER_TOKEN, bindingsFor, figuresOf, peerVerdicts, type PeerFigures } from '../../../../load/bench/edge/versus-peer.ts'
import { MODEL_REPOSITORY, PREDICT_PATH, WARM_USER, applicant, benchKey, predictBody } from '../../../../load/bench/edge/workload.ts'

const figures = (reqPerSec: number, cpuUs: number, p50Ms: number): PeerFigures => ({ reqPerSec, cpuUs, p50Ms, p99Ms: 2 * p50Ms, runs: [reqPerSec] })

describe('the edge against the peer worker: verdicts', () => {
  it('judge CPU, req/s and p50 of the edge against the peer, each beside both duplicates', () => {
    const verdicts = peerVerdicts({ edge: figures(900, 1100, 22), peer: figures(1000, 1000, 20), 'edge (dup)': figures(1000, 1000, 22), 'peer (dup)': figures(800, 1250, 25) })
    expect(verdicts.map((v) => [v.name, v.measured, v.pass])).toEqual([
      ['edge ÷ peer worker in workerd: CPU µs per predict', 1.1, true],
      ['edge ÷ peer worker in workerd: req/s', 0.9, true],
      ['edge ÷ peer worker in workerd: p50', 1.1, true],
    ])
    expect(verdicts.map((v) => v.noise)).toEqual([{ a: 1.1, b: 0.8 }, { a: 0.9, b: 1.25 }, { a: 1, b: 0.8 }])
  })

  it('miss each bound crossed, and a side not measured', () => {
    const missed = peerVerdicts({ edge: figures(840, 1210, 24.5), peer: figures(1000, 1000, 20) })
    expect(missed.map((v) => v.pass)).toEqual([false, false, false])
    expect(missed.every((v) => Number.isNaN(v.noise.a) && Number.isNaN(v.noise.b))).toBe(true)
    expect(peerVerdicts({ edge: figures(1000, 1000, 20) }).map((v) => [v.detail, v.pass])).toEqual([['not measured', false], ['not measured', false], ['not measured', false]])
  })

  it('reduce a row\'s runs to medians', () => {
    const run = (reqPerSec: number, cpuUs: number) => ({ load: { reqPerSec, ok: 1, completed: 1, p50Ms: reqPerSec / 100, p99Ms: 1, non2xx: 0, errors: 0, timeouts: 0 }, cpuUs })
    expect(figuresOf([run(300, 5), run(100, 9), run(200, 7)])).toEqual({ reqPerSec: 200, p50Ms: 2, p99Ms: 1, cpuUs: 7, runs: [300, 100, 200] })
  })
})

/** The peer is only a fair floor if it does the edge's work: the same answer for the same request, a checked key, a validated body. */
describe('the peer worker, in workerd in front of the real backend', () => {
  let backend: ServerProcess
  const workers: Miniflare[] = []
  let edgeUrl: string
  let peerUrl: string
  let key: string

  beforeAll(async () => {
    backend = await startServer('backend/server.ts', { MODEL_REPOSITORY, INFER_TOKEN })
    await waitReady(backend.url)
    const issued = await benchKey()
    key = issued.key
    const bindings = await bindingsFor(backend.url, issued.entry)
    const start = async (entry: string | undefined, vars: Record<string, string>) => {
      const mf = new Miniflare(await bundledWorkerOptions({ bundle: await bundleWorker(entry), bindings: vars, onLog: () => {} }))
      workers.push(mf)
      return (await mf.ready).toString().replace(/\/$/, '')
    }
    edgeUrl = await start(undefined, bindings.edge)
    peerUrl = await start('load/bench/edge/peer/worker.ts', bindings.peer)
  }, 180_000)

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.dispose()))
    await backend?.stop()
    await cleanUp()
  })

  const predict = (base: string, body: string, presented = key) =>
    fetch(`${base}${PREDICT_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${presented}` }, body })

  it('answers what the edge answers for the same applicant and user, through the backend that requires the bearer', async () => {
    for (const [i, user] of [[0, WARM_USER], [3, WARM_USER], [5, 'u-2']] as const) {
      const body = JSON.stringify({ instances: [applicant(i)], entity: { user_id: user } })
      const [edge, peer] = await Promise.all([predict(edgeUrl, body), predict(peerUrl, body)])
      expect([edge.status, peer.status]).toEqual([200, 200])
      const fromEdge = ((await edge.json()) as { predictions: Array<{ label: string; scores: Record<string, number> }> }).predictions[0]
      const fromPeer = ((await peer.json()) as { predictions: Array<{ label: string; probabilities: Record<string, number> }> }).predictions[0]
      expect(fromPeer.label).toBe(fromEdge.label)
      for (const [label, p] of Object.entries(fromEdge.scores)) expect(fromPeer.probabilities[label]).toBeCloseTo(p, 5)
    }
  })

  it('refuses an unknown key and an invalid body', async () => {
    expect((await predict(peerUrl, predictBody(1, WARM_USER), `${key.slice(0, -1)}x`)).status).toBe(401)
    expect((await predict(peerUrl, JSON.stringify({ instances: [{ ...applicant(0), age: 'old' }] }))).status).toBe(400)
    expect((await predict(peerUrl, JSON.stringify({ instances: [{ ...applicant(0), region: 'mars' }] }))).status).toBe(400)
  })
})
