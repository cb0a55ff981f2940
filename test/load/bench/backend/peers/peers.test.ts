import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFastApiPeer, startOipPeer } from '../../../../../load/bench/backend/peers/start.ts'
import { cleanUp } from '../../../../../load/harness/processes.ts'
import { startServer, waitReady, type ServerProcess } from '../../../../../load/harness/servers.ts'
import { creditRiskWorkload, type Workload } from '../../../../../load/harness/workloads.ts'
import { createRandom } from '../../../../../tools/training/random.ts'

/** FP32 through different engines (onnxruntime, numpy) agrees to about this; a wrong layer is far off. */
const TOLERANCE = 1e-5

interface InferAnswer {
  model_name: string
  model_version: string
  id: string
  outputs: Array<{ name: string; shape: number[]; datatype: string; data: number[] }>
}

/** `rows` applicants around the benchmark's own, each feature moved by up to ±50% so every request differs. */
const bodyOf = (workload: Workload, rows: number, id: string, seed: number): string => {
  const random = createRandom(seed)
  const data = Array.from({ length: rows }, () => Array.from(workload.row, (v) => Math.fround(v * (0.5 + random.next())))).flat()
  return JSON.stringify({ id, inputs: [{ name: workload.inputName, shape: [rows, workload.row.length], datatype: 'FP32', data }] })
}

const infer = async (server: ServerProcess, workload: Workload, body: string): Promise<InferAnswer> => {
  const res = await fetch(`${server.url}/v2/models/${workload.model}/infer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(30_000) })
  expect(res.status).toBe(200)
  return (await res.json()) as InferAnswer
}

/** Requests of 1 to 5 rows, sent at once so a batcher joins them and must hand each its own rows back. */
const requests = (workload: Workload) => Array.from({ length: 12 }, (_, i) => ({ id: `r${i}`, body: bodyOf(workload, 1 + (i % 5), `r${i}`, 100 + i) }))

describe('the benchmark\'s peer servers', () => {
  let workload: Workload
  const servers: Record<string, ServerProcess> = {}

  beforeAll(async () => {
    workload = await creditRiskWorkload()
    const starts: Record<string, () => Promise<ServerProcess>> = {
      backend: () => startServer('backend/server.ts', { MODEL_REPOSITORY: workload.repository, BATCHING: 'on' }),
      'peer batcher': () => startOipPeer(workload, true),
      'peer per request': () => startOipPeer(workload, false),
      fastapi: () => startFastApiPeer(workload),
    }
    for (const [name, start] of Object.entries(starts)) {
      servers[name] = await start()
      await waitReady(servers[name].url, { timeoutMs: 60_000 })
    }
  })

  afterAll(async () => {
    await cleanUp()
  })

  it.each(['peer batcher', 'peer per request', 'fastapi'])('%s answers what the backend answers, in the same response shape', async (peer) => {
    const sent = requests(workload)
    const [expected, actual] = await Promise.all(['backend', peer].map((name) => Promise.all(sent.map((r) => infer(servers[name], workload, r.body)))))
    for (const [i, answer] of actual.entries()) {
      const reference = expected[i]
      expect(answer).toMatchObject({ model_name: workload.model, model_version: workload.version, id: sent[i].id })
      expect(Object.keys(answer).sort()).toEqual(['id', 'model_name', 'model_version', 'outputs'])
      expect(answer.outputs.map(({ name, shape, datatype }) => ({ name, shape, datatype }))).toEqual(reference.outputs.map(({ name, shape, datatype }) => ({ name, shape, datatype })))
      const [got, want] = [answer.outputs[0].data, reference.outputs[0].data]
      expect(got).toHaveLength(want.length)
      for (const [j, value] of got.entries()) expect(Math.abs(value - want[j])).toBeLessThanOrEqual(TOLERANCE)
    }
    // The inputs differ enough that a peer answering one request's rows to another would be caught.
    expect(new Set(expected.map((a) => a.outputs[0].data[0])).size).toBe(sent.length)
  })

  it('the batcher counts the rows it runs, for the mean batch column', async () => {
    const before = (await (await fetch(`${servers['peer batcher'].url}/peer/stats`)).json()) as { rows: number; batches: number }
    const sent = requests(workload)
    await Promise.all(sent.map((r) => infer(servers['peer batcher'], workload, r.body)))
    const after = (await (await fetch(`${servers['peer batcher'].url}/peer/stats`)).json()) as { rows: number; batches: number }
    const rows = sent.reduce((n, r) => n + (JSON.parse(r.body) as { inputs: Array<{ shape: number[] }> }).inputs[0].shape[0], 0)
    expect(after.rows - before.rows).toBe(rows)
    expect(after.batches - before.batches).toBeGreaterThan(0)
  })
})
