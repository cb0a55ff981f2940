import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { creditRequest } from '../support/applicants.ts'
import { post, startBackend, type BackendProcess } from '../support/backend-process.ts'
import { createFixtureRepository, DEMO_REPOSITORY, type FixtureRepository } from '../support/fixture-repository.ts'
import { promtoolCheckMetrics } from '../../edge/pipeline/request-metrics/promtool.ts'
import { BACKEND_METRIC_PREFIX, BACKEND_METRICS } from '../../../shared/backend-metrics.ts'

/**
 * The real backend's /metrics: promtool finds nothing to lint in it, readiness and each version's
 * queue capacity are gauges beside the queue depth (what the alert rules divide and watch).
 */

let ready: BackendProcess
let unready: BackendProcess
let fixture: FixtureRepository

const scrape = async (backend: BackendProcess): Promise<string> => {
  const res = await fetch(`${backend.url}/metrics`)
  expect(res.status).toBe(200)
  return res.text()
}

/** The value of the one sample `series` names exactly (name and labels). */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

beforeAll(async () => {
  fixture = await createFixtureRepository()
  await fixture.editConfig('credit-risk', (config) => {
    ;(config.dynamic_batching as Record<string, unknown>).max_queue_size = 300
  })
  // A pinned model that can never load holds readiness off for good.
  await fixture.addModel('broken', { config: (config) => void (config.pinned = true) })
  const onnx = join(fixture.root, 'broken', '1', 'model.onnx')
  await writeFile(onnx, (await readFile(onnx)).subarray(0, 64))
  ready = await startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY })
  unready = await startBackend({ MODEL_REPOSITORY: fixture.root }, { waitReady: false })
})

afterAll(async () => {
  await Promise.all([ready?.stop(), unready?.stop()])
  await fixture?.remove()
})

describe('the backend exposition', () => {
  it('passes promtool check metrics with no finding, after traffic', async () => {
    for (let i = 0; i < 3; i++) expect((await post(`${ready.url}/v2/models/credit-risk/infer`, creditRequest(1, i))).status).toBe(200)
    const text = await scrape(ready)
    expect(text).toMatch(/^edge_infer_backend_requests_total\{/m)
    expect(await promtoolCheckMetrics(text)).toEqual({ code: 0, findings: '' })
  })

  it('declares exactly the metrics of the name table, besides the default process and Node.js ones', async () => {
    const declared = [...(await scrape(ready)).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1])
    expect(declared.every((name) => name.startsWith(BACKEND_METRIC_PREFIX))).toBe(true)
    const defaults = new RegExp(`^${BACKEND_METRIC_PREFIX}(process|nodejs)_`)
    expect(declared.filter((name) => !defaults.test(name)).sort()).toEqual(Object.values(BACKEND_METRICS).sort())
  })

  it('says ready as /v2/health/ready does', async () => {
    expect((await fetch(`${ready.url}/v2/health/ready`)).status).toBe(200)
    expect(sample(await scrape(ready), 'edge_infer_backend_ready')).toBe(1)
    // Loaded what it could: credit-risk serves, the pinned broken model never will.
    expect((await post(`${unready.url}/v2/models/credit-risk/infer`, creditRequest(1))).status).toBe(200)
    expect((await fetch(`${unready.url}/v2/health/ready`)).status).toBe(503)
    expect(sample(await scrape(unready), 'edge_infer_backend_ready')).toBe(0)
  })

  it('gives every serving version its max_queue_size as capacity, beside its depth', async () => {
    const text = await scrape(unready)
    const versions = [...text.matchAll(/^edge_infer_backend_queue_depth_rows\{model="credit-risk",version="(\d+)"\}/gm)].map((m) => m[1])
    expect(versions.length).toBeGreaterThan(0)
    for (const version of versions) expect(sample(text, `edge_infer_backend_queue_capacity_rows{model="credit-risk",version="${version}"}`)).toBe(300)
    expect(sample(await scrape(ready), 'edge_infer_backend_queue_capacity_rows{model="credit-risk",version="2"}')).toBe(4096)
  })
})
