import { cp, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { post, startBackend, until, type BackendProcess } from '../support/backend-process.ts'
import { DEMO_REPOSITORY, createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'
import { formatManifest } from '../../../tools/training/manifest.ts'
import { creditRequest } from '../support/applicants.ts'

const ADMIN_TOKEN = 'lifecycle-admin-token-0123456789'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
let repo: FixtureRepository | undefined
let backend: BackendProcess | undefined

interface Infer { model_version: string; outputs: Array<{ data: number[] }> }
interface IndexEntry { name: string; version: string; state: string; reason: string }
interface LoadAnswer { versions: Array<{ version: number; state: string }> }

const start = async (env: Record<string, string> = {}) => {
  repo = await createFixtureRepository()
  return repo
}
const launch = async (env: Record<string, string> = {}) => {
  backend = await startBackend({ MODEL_REPOSITORY: repo!.root, ADMIN_TOKEN, ...env })
  return backend.url
}
const index = async (url: string) => (await post<IndexEntry[]>(`${url}/v2/repository/index`, {}, admin)).body
const entry = (entries: IndexEntry[], name: string, version: string) => entries.find((e) => e.name === name && e.version === version)
const infer = (url: string, path = 'credit-risk', rows = 2) => post<Infer>(`${url}/v2/models/${path}/infer`, creditRequest(rows))

/** Keeps `workers` clients sending requests until stopped; records every status. */
const steadyLoad = (url: string, workers = 8) => {
  const statuses: number[] = []
  const versions: string[] = []
  let running = true
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; running; i++) {
      const res = await post<Infer>(`${url}/v2/models/credit-risk/infer`, creditRequest(1 + (i % 3), w * 100 + i))
      statuses.push(res.status)
      versions.push(res.body.model_version)
    }
  })
  return {
    statuses,
    versions,
    async stop() {
      running = false
      await Promise.all(loops)
    },
  }
}

afterEach(async () => {
  await backend?.stop()
  await repo?.remove()
  backend = undefined
  repo = undefined
})

describe('model lifecycle', () => {
  it('refuses a version whose files do not match its MANIFEST and keeps the previous one serving', async () => {
    const fixture = await start()
    const url = await launch()
    const v3 = join(fixture.root, 'credit-risk', '3')
    await cp(join(fixture.root, 'credit-risk', '2'), v3, { recursive: true })
    const onnx = await readFile(join(v3, 'model.onnx'))
    onnx[onnx.length - 10] ^= 0xff
    await writeFile(join(v3, 'model.onnx'), onnx)

    // Nothing that needed loading loaded: 409, with what happened to each version.
    const load = await post<LoadAnswer>(`${url}/v2/repository/models/credit-risk/load`, '', admin)
    expect(load.status).toBe(409)
    expect(load.body).toEqual({
      error: expect.stringMatching(/^model "credit-risk" could not be loaded: version 3 refused: .*does not match MANIFEST/),
      model: 'credit-risk',
      versions: [
        { version: 3, state: 'refused', reason: expect.stringMatching(/model\.onnx sha256 [0-9a-f]{64} does not match MANIFEST/), serving_previous: false },
        { version: 2, state: 'kept' },
        { version: 1, state: 'kept', reason: 'not selected by the version policy; serving until version 3 is ready' },
      ],
    })
    const entries = await index(url)
    expect(entry(entries, 'credit-risk', '3')).toMatchObject({ state: 'UNAVAILABLE', reason: expect.stringMatching(/model\.onnx sha256 [0-9a-f]{64} does not match MANIFEST/) })
    expect(entry(entries, 'credit-risk', '2')).toMatchObject({ state: 'READY' })
    const res = await infer(url)
    expect(res.status).toBe(200)
    expect(res.body.model_version).toBe('2')
    const pinned = await post<{ error: string }>(`${url}/v2/models/credit-risk/versions/3/infer`, creditRequest(1))
    expect(pinned.status).toBe(503)
    expect(pinned.body.error).toBe('model "credit-risk" version 3 is not ready')
  })

  it('keeps serving the loaded copy when a version is corrupted on disk and reloaded', async () => {
    const fixture = await start()
    const url = await launch()
    const before = await infer(url)
    const v2 = join(fixture.root, 'credit-risk', '2', 'model.onnx')
    const onnx = await readFile(v2)
    onnx[100] ^= 0x01
    await writeFile(v2, onnx)
    const load = await post<LoadAnswer>(`${url}/v2/repository/models/credit-risk/load`, '', admin)
    expect([load.status, load.body.versions]).toEqual([409, [
      { version: 2, state: 'refused', reason: expect.stringMatching(/does not match MANIFEST/), serving_previous: true },
      { version: 1, state: 'kept' },
    ]])
    expect(entry(await index(url), 'credit-risk', '2')).toMatchObject({ state: 'READY', reason: expect.stringMatching(/serving the previously loaded copy/) })
    const after = await infer(url)
    expect(after.body.outputs).toEqual(before.body.outputs)
  })

  it('unloads the least recently used model past the memory budget, never a pinned one, and reloads it on demand', async () => {
    const fixture = await start()
    // ~410 KB of weights each: two fit in a 1 MB budget beside the pinned demo model, three do not.
    for (const name of ['big-a', 'big-b', 'big-c']) await fixture.addModel(name, { hidden: [320, 320] })
    const url = await launch({ MODEL_MEMORY_BUDGET_MB: '1' })
    const body = { inputs: [{ name: 'features', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] }
    for (const name of ['big-a', 'big-b']) expect((await post(`${url}/v2/models/${name}/infer`, body)).status).toBe(200)
    expect((await post(`${url}/v2/models/big-c/infer`, body)).status).toBe(200)
    await until(async () => entry(await index(url), 'big-a', '1')?.state === 'UNAVAILABLE')
    let entries = await index(url)
    expect(entry(entries, 'big-b', '1')?.state).toBe('READY')
    expect(entry(entries, 'big-c', '1')?.state).toBe('READY')
    expect(entry(entries, 'credit-risk', '2')?.state).toBe('READY')

    expect((await post(`${url}/v2/models/big-a/infer`, body)).status).toBe(200)
    await until(async () => entry(await index(url), 'big-b', '1')?.state === 'UNAVAILABLE')
    entries = await index(url)
    expect(entry(entries, 'big-a', '1')?.state).toBe('READY')
    expect(entry(entries, 'credit-risk', '1')?.state).toBe('READY')
  })

  it('reloads a changed version beside the serving one under load with zero failed requests', async () => {
    const fixture = await start()
    const url = await launch()
    const v1Answer = await post<Infer>(`${url}/v2/models/credit-risk/versions/1/infer`, creditRequest(2))
    const load = steadyLoad(url)
    await until(() => load.statuses.length >= 200)
    // Replace version 2's contents with version 1's (a valid, different model).
    for (const file of ['model.onnx', 'baseline.json', 'metrics.json', 'MANIFEST']) {
      await cp(join(fixture.root, 'credit-risk', '1', file), join(fixture.root, 'credit-risk', '2', file))
    }
    const reloadedAt = load.statuses.length
    expect((await post(`${url}/v2/repository/models/credit-risk/load`, '', admin)).status).toBe(200)
    await until(() => load.statuses.length >= reloadedAt + 200)
    await load.stop()

    expect(load.statuses.filter((s) => s !== 200)).toEqual([])
    const now = await infer(url)
    expect(now.body.model_version).toBe('2')
    expect(now.body.outputs).toEqual(v1Answer.body.outputs)
  })

  it('adds a new version under load: traffic moves to it once warm, nothing fails', async () => {
    const fixture = await start()
    const url = await launch()
    const load = steadyLoad(url)
    await until(() => load.statuses.length >= 200)
    await cp(join(fixture.root, 'credit-risk', '1'), join(fixture.root, 'credit-risk', '3'), { recursive: true })
    expect((await post(`${url}/v2/repository/models/credit-risk/load`, '', admin)).status).toBe(200)
    const loadedAt = load.statuses.length
    await until(() => load.statuses.length >= loadedAt + 200)
    await load.stop()

    expect(load.statuses.filter((s) => s !== 200)).toEqual([])
    expect(load.versions.slice(0, 100).every((v) => v === '2')).toBe(true)
    expect(load.versions.slice(-100).every((v) => v === '3')).toBe(true)
    // latest: 2 now selects 3 and 2; version 1 was drained and unloaded.
    const entries = await index(url)
    expect(entry(entries, 'credit-risk', '1')).toMatchObject({ state: 'UNAVAILABLE', reason: 'not selected by the version policy' })
  })

  it('retires a served model whose folder is deleted, answering 404 from then on', async () => {
    const fixture = await start()
    await fixture.addModel('doomed')
    const url = await launch()
    const body = { inputs: [{ name: 'features', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] }
    expect((await post(`${url}/v2/models/doomed/infer`, body)).status).toBe(200)
    await rm(join(fixture.root, 'doomed'), { recursive: true })
    expect((await post(`${url}/v2/repository/models/doomed/load`, '', admin)).status).toBe(404)
    expect((await post(`${url}/v2/models/doomed/infer`, body)).status).toBe(404)
    expect((await index(url)).some((e) => e.name === 'doomed')).toBe(false)
    expect((await infer(url)).status).toBe(200)
  })

  it('reports a broken config.json with the field path and keeps the server up', async () => {
    const fixture = await start()
    await fixture.addModel('broken', { config: (c) => ((c.dynamic_batching as Record<string, unknown>).max_queue_delay_us = -5) })
    const url = await launch()
    const entries = await index(url)
    expect(entries.find((e) => e.name === 'broken')).toMatchObject({ state: 'UNAVAILABLE', reason: expect.stringMatching(/dynamic_batching\.max_queue_delay_us/) })
    // Permanent until the owner edits the file: 409 with what is wrong, no Retry-After, on infer and metadata.
    const res = await post<{ error: string }>(`${url}/v2/models/broken/infer`, { inputs: [] })
    expect(res.status).toBe(409)
    expect(res.body.error).toMatch(/^model "broken" configuration refused: config\.json is invalid: dynamic_batching\.max_queue_delay_us: /)
    expect(res.headers.get('retry-after')).toBeNull()
    const metadata = await fetch(`${url}/v2/models/broken`)
    expect([metadata.status, ((await metadata.json()) as { error: string }).error]).toEqual([409, res.body.error])
    expect((await infer(url)).status).toBe(200)
  })

  it('names a model folder without config.json as such instead of an unknown model', async () => {
    const fixture = await start()
    await fixture.addModel('forgot-config')
    await rm(join(fixture.root, 'forgot-config', 'config.json'))
    const url = await launch()
    const res = await post<{ error: string }>(`${url}/v2/models/forgot-config/infer`, { inputs: [] })
    expect([res.status, res.body.error]).toEqual([404, 'model folder "forgot-config" has no config.json, so it is not a model of the repository'])
    const load = await post<{ error: string }>(`${url}/v2/repository/models/forgot-config/load`, '', admin)
    expect([load.status, load.body.error]).toEqual([404, res.body.error])
    expect((await post<{ error: string }>(`${url}/v2/models/nothing-here/infer`, { inputs: [] })).body.error).toBe('unknown model "nothing-here"')
  })

  it.each([
    ['whose files do not match its MANIFEST', async (dir: string) => {
      const onnx = await readFile(join(dir, 'model.onnx'))
      onnx[onnx.length - 10] ^= 0xff
      await writeFile(join(dir, 'model.onnx'), onnx)
    }],
    ['whose ONNX is corrupt under a matching MANIFEST', async (dir: string) => {
      const files: Record<string, Uint8Array> = {}
      for (const file of ['model.onnx', 'baseline.json', 'metrics.json']) files[file] = await readFile(join(dir, file))
      files['model.onnx'] = files['model.onnx']!.subarray(0, 200)
      await writeFile(join(dir, 'model.onnx'), files['model.onnx'])
      await writeFile(join(dir, 'MANIFEST'), formatManifest(files))
    }],
  ])('keeps the only serving version (latest: 1) serving beside a new version %s, until a good one is ready', async (_case, breakIt) => {
    const fixture = await start()
    await rm(join(fixture.root, 'credit-risk', '2'), { recursive: true })
    await fixture.editConfig('credit-risk', (c) => (c.version_policy = { latest: 1 }))
    const url = await launch()
    expect((await infer(url)).body.model_version).toBe('1')
    await cp(join(DEMO_REPOSITORY, 'credit-risk', '2'), join(fixture.root, 'credit-risk', '2'), { recursive: true })
    await breakIt(join(fixture.root, 'credit-risk', '2'))

    const refused = await post<LoadAnswer>(`${url}/v2/repository/models/credit-risk/load`, '', admin)
    expect([refused.status, refused.body.versions.map((v) => [v.version, v.state])]).toEqual([409, [[2, expect.stringMatching(/^(refused|failed)$/)], [1, 'kept']]])
    let entries = await index(url)
    expect(entry(entries, 'credit-risk', '2')).toMatchObject({ state: 'UNAVAILABLE' })
    expect(entry(entries, 'credit-risk', '1')).toMatchObject({ state: 'READY', reason: 'not selected by the version policy; serving until version 2 is ready' })
    const unversioned = await infer(url)
    expect([unversioned.status, unversioned.body.model_version]).toEqual([200, '1'])
    expect((await post(`${url}/v2/models/credit-risk/versions/1/infer`, creditRequest(1))).status).toBe(200)

    // The successor repaired: it takes over, and only then is version 1 retired.
    await rm(join(fixture.root, 'credit-risk', '2'), { recursive: true })
    await cp(join(DEMO_REPOSITORY, 'credit-risk', '2'), join(fixture.root, 'credit-risk', '2'), { recursive: true })
    const repaired = await post<LoadAnswer>(`${url}/v2/repository/models/credit-risk/load`, '', admin)
    expect([repaired.status, repaired.body]).toEqual([200, { loaded: 'credit-risk', versions: [{ version: 2, state: 'loaded' }, { version: 1, state: 'retired', reason: 'not selected by the version policy' }] }])
    expect((await infer(url)).body.model_version).toBe('2')
    await until(async () => entry(await index(url), 'credit-risk', '1')?.state === 'UNAVAILABLE')
    entries = await index(url)
    expect(entry(entries, 'credit-risk', '1')).toMatchObject({ reason: 'not selected by the version policy' })
  })
})
