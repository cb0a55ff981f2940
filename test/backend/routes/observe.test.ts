import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DriftReport } from '../../../backend/monitor/drift/report.ts'
import { creditRequest } from '../support/applicants.ts'
import { post, startBackend, type BackendProcess } from '../support/backend-process.ts'

/**
 * POST /v2/models/{m}/versions/{v}/observe on the real backend (credit-risk with its drift
 * baseline, no Redis): rows the edge answered from its cache, counted by the version's drift
 * counter as infer counts them, once per observation id, without touching the request health.
 */

const INFER_TOKEN = 'observe-route-infer-token-0123'
const auth = { authorization: `Bearer ${INFER_TOKEN}` }

let backend: BackendProcess

const report = async (version: number): Promise<DriftReport> => {
  const res = await fetch(`${backend.url}/v2/models/credit-risk/versions/${version}/drift?window=15m`, { headers: auth })
  expect(res.status).toBe(200)
  return (await res.json()) as DriftReport
}

type Output = { name: string; shape: number[]; datatype: string; data: number[] }

/** Answers `count` applicants from `from` on `version`, as the edge would have: the probabilities it would cache. */
const infer = async (version: number, count: number, from: number): Promise<Output> => {
  const res = await post<{ outputs: Output[] }>(`${backend.url}/v2/models/credit-risk/versions/${version}/infer`, creditRequest(count, from), auth)
  expect(res.status).toBe(200)
  const probabilities = res.body.outputs.find((o) => o.name === 'probabilities')!
  return { name: 'probabilities', shape: [count, 2], datatype: 'FP32', data: probabilities.data.flat() }
}

const observe = (version: number, body: unknown, headers: Record<string, string> = auth) =>
  post<{ id?: string; rows?: number; counted?: boolean; error?: string }>(`${backend.url}/v2/models/credit-risk/versions/${version}/observe`, body, headers)

const observation = (id: string, count: number, from: number, output: Output) => ({ id, ...creditRequest(count, from), outputs: [output] })

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models', INFER_TOKEN })
})

afterAll(async () => {
  await backend?.stop()
})

describe('POST /v2/models/{m}/versions/{v}/observe', () => {
  it('counts the rows like infer does (features and prediction), not the request health, once per id', async () => {
    const served = await infer(2, 40, 500)
    const computed = await report(2)
    expect(computed.rows).toBe(40)
    expect(computed.health).toMatchObject({ requests: 1, rows: 40 })

    // The same 40 rows answered again from the edge cache, with the probabilities they were cached with.
    const first = await observe(2, observation('req-1:2:abc', 40, 500, served))
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    expect(first.body).toEqual({ id: 'req-1:2:abc', rows: 40, counted: true })
    const doubled = await report(2)
    expect(doubled.rows).toBe(80)
    expect(doubled.prediction.counts).toEqual(computed.prediction.counts.map((n) => 2 * n))
    expect(doubled.prediction.class_counts).toEqual(computed.prediction.class_counts.map((n) => 2 * n))
    for (const [i, f] of doubled.features.entries()) expect(f.missing_rate, f.name).toEqual(computed.features[i]!.missing_rate)
    // Health is the backend's own calls: the observation is no request, error or latency sample.
    expect(doubled.health).toEqual(computed.health)

    // A resend (its first answer was lost to the edge) adds nothing; another id does.
    const resent = await observe(2, observation('req-1:2:abc', 40, 500, served))
    expect(resent.status).toBe(200)
    expect((await report(2)).rows).toBe(80)
    const other = await observe(2, observation('req-2:2:def', 3, 500, { ...served, shape: [3, 2], data: served.data.slice(0, 6) }))
    expect(other.status).toBe(200)
    expect((await report(2)).rows).toBe(83)
  })

  it('requires the infer token', async () => {
    const output = { name: 'probabilities', shape: [1, 2], datatype: 'FP32', data: [0.3, 0.7] }
    const without = await observe(1, observation('no-token-1', 1, 0, output), {})
    expect(without.status).toBe(401)
    const wrong = await observe(1, observation('no-token-1', 1, 0, output), { authorization: 'Bearer not-the-token-at-all-0000' })
    expect(wrong.status).toBe(401)
    expect((await report(1)).rows).toBe(0)
  })

  it('refuses bad input with a 4xx saying what is wrong, and counts none of it', async () => {
    const output = { name: 'probabilities', shape: [2, 2], datatype: 'FP32', data: [0.3, 0.7, 0.9, 0.1] }
    const good = observation('bad-input-1', 2, 0, output)
    const cases: Array<[unknown, RegExp]> = [
      [{ ...good, id: undefined }, /id must be/],
      [{ ...good, id: 'has spaces in it' }, /id must be/],
      [{ ...good, outputs: undefined }, /outputs must hold one tensor/],
      [{ ...good, outputs: [{ ...output, name: 'logits' }] }, /outputs\[0\]\.name must be "probabilities"/],
      [{ ...good, outputs: [{ ...output, shape: [1, 2], data: [0.3, 0.7] }] }, /shape must be \[2, 2\]/],
      [{ ...good, outputs: [{ ...output, data: [0.3, 0.7, 0.9] }] }, /data must hold 4 numbers/],
      [{ ...good, outputs: [{ ...output, data: [0.3, 0.7, 1.9, -0.9] }] }, /probability in \[0, 1\]/],
      [{ ...good, inputs: [{ ...good.inputs[0], name: 'pixels' }] }, /unknown input/],
      [[1, 2], /JSON object/],
    ]
    for (const [body, detail] of cases) {
      const res = await observe(1, body)
      expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(400)
      expect(res.body.error).toMatch(detail)
    }
    expect((await post(`${backend.url}/v2/models/nope/versions/1/observe`, good, auth)).status).toBe(404)
    expect((await report(1)).rows).toBe(0)
  })
})
