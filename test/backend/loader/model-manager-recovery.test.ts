import { cp, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { InferenceError } from '../../../backend/errors.ts'
import { ModelManager, type ModelManagerOptions } from '../../../backend/loader/model-manager.ts'
import { createMetrics, type Metrics } from '../../../backend/monitor/metrics.ts'
import { Repository } from '../../../backend/repository/repository.ts'
import { CRASH_VALUE } from '../support/crashing-worker.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'
import { until } from '../support/backend-process.ts'

/**
 * The loader in process, on a fixture repository and real inference threads (the crashing
 * worker of support/crashing-worker.ts, so a test can kill a version's only instance).
 */

let repo: FixtureRepository | undefined
let manager: ModelManager | undefined

afterEach(async () => {
  await manager?.shutdown()
  await repo?.remove()
  manager = repo = undefined
})

interface Logged { level: string; msg: string; fields: Record<string, unknown> }

const setup = async (models: Record<string, (config: Record<string, unknown>) => void>, options: Partial<ModelManagerOptions> = {}) => {
  repo = await createFixtureRepository({ withDemo: false })
  for (const [name, config] of Object.entries(models)) await repo.addModel(name, { config })
  const logged: Logged[] = []
  const log = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => logged.push({ level, msg, fields })
  const logger = { error: log('error'), warn: log('warn'), info: log('info'), debug: log('debug') }
  let metrics: Metrics | undefined
  const created = new ModelManager(new Repository(repo.root), {
    batching: true,
    memoryBudgetBytes: 1024 * 1024 * 1024,
    logger: logger as never,
    workerUrl: new URL('../support/crashing-worker.ts', import.meta.url),
    ...options,
    ...(options.metrics ? {} : { metrics: (metrics = createMetrics({ depths: () => created.depths() })) }),
  })
  manager = created
  await created.start()
  return { manager: created, logged, metrics: metrics!, root: repo.root }
}

const request = (first: number) => ({ inputs: { features: { datatype: 'FP32' as const, dims: [1, 4], data: Float32Array.from([first, 1, 2, 3]) } }, rows: 1, outputs: ['probabilities'] })
const refusal = (work: Promise<unknown>) => work.then(() => undefined, (err: unknown) => err as InferenceError)
/** Flips a byte of a version's model.onnx (its MANIFEST no longer matches); returns the original bytes. */
const corrupt = async (dir: string) => {
  const onnx = await readFile(join(dir, 'model.onnx'))
  const broken = Buffer.from(onnx)
  broken[broken.length - 10]! ^= 0xff
  await writeFile(join(dir, 'model.onnx'), broken)
  return onnx
}
const exposition = (metrics: Metrics) => metrics.exposition()

describe('a model that fails to load', () => {
  it('is loaded once per backoff, not once per request, and answers 503 with the backoff left as Retry-After', async () => {
    let clock = 1_000_000
    const { manager, logged, root } = await setup({ bad: () => {} }, { now: () => clock, retryBackoff: { firstMs: 5_000, maxMs: 60_000 } })
    const original = await corrupt(join(root, 'bad', '1'))
    const attempts = () => logged.filter((l) => l.msg === 'model version refused').length

    const first: Array<InferenceError | undefined> = []
    for (let i = 0; i < 20; i++) first.push(await refusal(manager.resolve('bad')))
    expect(first.map((e) => e?.status)).toEqual(Array(20).fill(503))
    expect(attempts()).toBe(1)
    // The request that made the attempt is told the whole backoff.
    expect(first.map((e) => e?.headers['retry-after'])).toEqual(Array(20).fill('5'))

    clock += 1_500
    const during = await refusal(manager.resolve('bad'))
    expect([during?.status, during?.headers['retry-after']]).toEqual([503, '4'])
    expect(await refusal(manager.resolve('bad', '1'))).toMatchObject({ status: 503, headers: { 'retry-after': '4' } })
    expect(attempts()).toBe(1)

    // Backoff over: the next request tries again; it fails again, and the backoff doubles.
    clock += 3_500
    expect(await refusal(manager.resolve('bad'))).toMatchObject({ status: 503, headers: { 'retry-after': '10' } })
    expect(attempts()).toBe(2)
    clock += 9_001
    expect(await refusal(manager.resolve('bad'))).toMatchObject({ status: 503, headers: { 'retry-after': '1' } })
    expect(attempts()).toBe(2)

    // Repaired: the first request after the backoff loads it.
    await writeFile(join(root, 'bad', '1', 'model.onnx'), original)
    clock += 999
    const served = await manager.resolve('bad')
    expect(served.version).toBe(1)
    expect(attempts()).toBe(2)
  })

  it('is loaded at once by an operator whatever the backoff', async () => {
    let clock = 0
    const { manager, root } = await setup({ bad: () => {} }, { now: () => clock, retryBackoff: { firstMs: 60_000, maxMs: 60_000 } })
    const original = await corrupt(join(root, 'bad', '1'))
    expect(await refusal(manager.resolve('bad'))).toMatchObject({ status: 503, headers: { 'retry-after': '60' } })
    await writeFile(join(root, 'bad', '1', 'model.onnx'), original)
    clock += 1
    expect(await manager.load('bad')).toEqual({ model: 'bad', ok: true, versions: [{ version: 1, state: 'loaded' }] })
    expect((await manager.resolve('bad')).version).toBe(1)
  })
})

describe('a pinned version whose inference instance dies while its file differs from the MANIFEST', () => {
  it('turns readiness off with the reason, shows in metrics, and heals by itself once the bytes verify again', async () => {
    const { manager, metrics, root } = await setup({ tiny: (c) => (c.pinned = true) }, { retryBackoff: { firstMs: 20, maxMs: 100 } })
    expect(manager.readiness()).toEqual({ ready: true, waiting: [] })
    const version = await manager.resolve('tiny')
    const original = await corrupt(join(root, 'tiny', '1'))

    await expect(version.submit(request(CRASH_VALUE))).rejects.toMatchObject({ status: 500 })
    await until(() => version.broken !== undefined)
    expect(manager.ready()).toBe(false)
    expect(manager.readiness().waiting).toEqual([expect.stringMatching(/^model "tiny" version 1 is broken: no inference instance left: .*changed since its version was verified/)])
    expect(await exposition(metrics)).toMatch(/^edge_infer_backend_model_version_broken\{model="tiny",version="1"\} 1$/m)
    // Retries with the file still wrong are refused and change nothing.
    expect(await refusal(manager.resolve('tiny'))).toMatchObject({ status: 503 })
    expect(manager.ready()).toBe(false)

    await writeFile(join(root, 'tiny', '1', 'model.onnx'), original)
    await until(() => manager.ready())
    const healed = await manager.resolve('tiny')
    expect(healed).not.toBe(version)
    expect((await healed.submit(request(0.5))).outputs.probabilities!.dims).toEqual([1, 2])
    await until(async () => !(await exposition(metrics)).includes('model_version_broken{'))
    expect(await exposition(metrics)).toMatch(/^edge_infer_backend_execution_provider_info\{model="tiny",version="1",provider="cpu"\} 1$/m)
  })
})

describe('a version reloaded in place', () => {
  it('keeps its execution_provider_info series after the old copy is released', async () => {
    const { manager, metrics, logged, root } = await setup({ tiny: () => {} })
    await repo!.addModel('other', { seed: 7 })
    const old = await manager.resolve('tiny')
    await cp(join(root, 'other', '1'), join(root, 'tiny', '1'), { recursive: true })
    expect(await manager.load('tiny')).toEqual({ model: 'tiny', ok: true, versions: [{ version: 1, state: 'loaded' }] })
    expect(await manager.resolve('tiny')).not.toBe(old)
    await until(() => logged.some((l) => l.msg === 'model version released' && l.fields.version === 1))
    expect(await exposition(metrics)).toMatch(/^edge_infer_backend_execution_provider_info\{model="tiny",version="1",provider="cpu"\} 1$/m)
  })
})

describe('latest: 2 with a broken successor', () => {
  it('keeps both serving versions, the older one included, and says the successor was refused', async () => {
    const { manager, root } = await setup({ tiny: (c) => (c.version_policy = { latest: 2 }) })
    expect((await manager.resolve('tiny')).version).toBe(1)
    await cp(join(root, 'tiny', '1'), join(root, 'tiny', '2'), { recursive: true })
    expect((await manager.load('tiny')).versions).toEqual([{ version: 2, state: 'loaded' }, { version: 1, state: 'kept' }])
    await cp(join(root, 'tiny', '1'), join(root, 'tiny', '3'), { recursive: true })
    await corrupt(join(root, 'tiny', '3'))

    const report = await manager.load('tiny')
    expect(report).toMatchObject({ model: 'tiny', ok: false })
    expect(report.versions).toEqual([
      { version: 3, state: 'refused', reason: expect.stringMatching(/model\.onnx sha256 [0-9a-f]{64} does not match MANIFEST/), serving_previous: false },
      { version: 2, state: 'kept' },
      { version: 1, state: 'kept', reason: 'not selected by the version policy; serving until version 3 is ready' },
    ])
    expect((await manager.resolve('tiny')).version).toBe(2)
    expect((await manager.resolve('tiny', '1')).version).toBe(1)
    expect((await manager.resolve('tiny', '2')).version).toBe(2)
  })
})
