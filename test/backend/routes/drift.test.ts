import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DriftReport } from '../../../backend/monitor/drift/report.ts'
import { generateApplicants } from '../../../tools/training/applicants.ts'
import { encodeRows } from '../../../tools/training/dataset.ts'
import { CREDIT_SPEC } from '../support/applicants.ts'
import { post, startBackend, type BackendProcess } from '../support/backend-process.ts'

let backend: BackendProcess

const report = async (query = '', version = 2) => {
  const res = await fetch(`${backend.url}/v2/models/credit-risk/versions/${version}/drift${query}`)
  return { status: res.status, body: (await res.json()) as DriftReport & { error?: string } }
}

/** Sends `rows` applicants from the training distribution, with `edit` applied, in requests of 500. */
const serve = async (rows: number, seed: number, edit: (a: ReturnType<typeof generateApplicants>['applicants'][number]) => typeof a = (a) => a, version = 2) => {
  const applicants = generateApplicants(rows, seed).applicants.map(edit)
  for (let at = 0; at < rows; at += 500) {
    const x = encodeRows(CREDIT_SPEC, applicants.slice(at, at + 500))
    const res = await post(`${backend.url}/v2/models/credit-risk/versions/${version}/infer`, {
      inputs: [{ name: 'features', shape: [x.rows, x.cols], datatype: 'FP32', data: Array.from(x.data) }],
    })
    expect(res.status).toBe(200)
  }
}

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
})

afterAll(async () => {
  await backend?.stop()
})

describe('GET /v2/models/{m}/versions/{v}/drift', () => {
  it('says insufficient, never ok, before 1,000 rows, and ok for traffic like the training data', async () => {
    await serve(500, 91_001)
    const early = await report('?window=15m')
    expect(early.status).toBe(200)
    expect(early.body.rows).toBe(500)
    expect(early.body.dataset.verdict).toBe('insufficient')
    expect(new Set(early.body.features.map((f) => f.verdict))).toEqual(new Set(['insufficient']))

    await serve(1_500, 91_002)
    const { body } = await report()
    expect(body.window).toMatchObject({ minutes: 15, evaluated_windows: 6 })
    expect(body.rows).toBe(2_000)
    expect(body.dataset.verdict).toBe('ok')
    expect(body.prediction.verdict).toBe('ok')
    for (const f of body.features) {
      expect(f.verdict, f.name).toBe('ok')
      expect(f.psi).toBeLessThan(f.thresholds.warning)
      expect(f.thresholds.warning).toBeGreaterThanOrEqual(0.1)
    }
    expect(body.health).toMatchObject({ requests: 4, errors: 0, error_rate: 0, rows: 2_000 })
    expect(body.health.p95_ms).toBeGreaterThan(0)
  })

  it('finds a shifted important feature critical and the dataset with it, on the other version', async () => {
    // Everyone's debt ratio up by 0.3 (about 1.5σ): version 1 has seen nothing else.
    await serve(1_200, 91_003, (a) => ({ ...a, debt_ratio: a.debt_ratio + 0.3 }), 1)
    const { status, body } = await report('?window=1h', 1)
    expect(status).toBe(200)
    const debt = body.features.find((f) => f.name === 'debt_ratio')!
    expect(debt).toMatchObject({ verdict: 'critical', important: true, consecutive_critical: 1, alerting: false })
    expect(debt.ks!.p_value).toBeLessThan(1e-6)
    expect(body.dataset).toMatchObject({ verdict: 'critical', critical_features: expect.arrayContaining(['debt_ratio']) })
    expect(body.features.find((f) => f.name === 'region')!.verdict).toBe('ok')
    // One hour windows fill three hours of retention.
    expect(body.window.evaluated_windows).toBe(3)

    // The same verdicts as Prometheus gauges, for alerting rules outside the controller.
    const metrics = await (await fetch(`${backend.url}/metrics`)).text()
    expect(metrics).toContain('edge_infer_backend_drift_verdict{model="credit-risk",version="1",feature="debt_ratio"} 2')
    expect(metrics).toContain('edge_infer_backend_drift_verdict{model="credit-risk",version="2",feature="debt_ratio"} 0')
    expect(metrics).toContain('edge_infer_backend_drift_dataset_verdict{model="credit-risk",version="1"} 2')
    expect(metrics).toMatch(new RegExp(`edge_infer_backend_drift_psi\\{model="credit-risk",version="1",feature="debt_ratio"\\} ${debt.psi.toString().slice(0, 6)}`))
    expect(metrics).toContain('edge_infer_backend_drift_alerting{model="credit-risk",version="2",feature="__prediction__"} 0')
  })

  it('refuses a bad window and names an unknown version', async () => {
    for (const bad of ['0m', '181', '4h', '15s', '-5', 'abc']) {
      const { status, body } = await report(`?window=${bad}`)
      expect(status, bad).toBe(400)
      expect(body.error).toMatch(/window must be/)
    }
    expect((await report('', 9)).status).toBe(404)
  })

  it('counts nothing with DRIFT_MONITORING=off, and says so', async () => {
    const off = await startBackend({ MODEL_REPOSITORY: 'models', DRIFT_MONITORING: 'off' })
    try {
      const res = await fetch(`${off.url}/v2/models/credit-risk/versions/2/drift`)
      expect(res.status).toBe(404)
      expect(((await res.json()) as { error: string }).error).toMatch(/no drift monitoring/)
    } finally {
      await off.stop()
    }
  })
})
