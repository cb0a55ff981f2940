import { appendFile, cp, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { post, startBackend, type BackendProcess } from '../support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'
import { creditRequest } from '../support/applicants.ts'

const ADMIN_TOKEN = 'load-reasons-admin-token-0123456789'
let repo: FixtureRepository
let backend: BackendProcess

/** What a load-failure reason carries that a client must not read: hashes, paths, file names. */
const INTERNAL = /[0-9a-f]{64}|hostname|MANIFEST|model\.onnx|\/tmp\//

const get = async (path: string) => {
  const res = await fetch(`${backend.url}${path}`)
  return { status: res.status, text: await res.text() }
}

beforeAll(async () => {
  repo = await createFixtureRepository()
  const model = join(repo.root, 'credit-risk')
  // Version 3 lists a file outside its folder; version 4's model has one byte changed. The policy
  // (latest: 2) selects 3 and 4, so 1 and 2 are neither served nor pinnable.
  await cp(join(model, '2'), join(model, '3'), { recursive: true })
  await appendFile(join(model, '3', 'MANIFEST'), `${'0'.repeat(64)}  ../../../../etc/hostname\n`)
  await cp(join(model, '2'), join(model, '4'), { recursive: true })
  const onnx = await readFile(join(model, '4', 'model.onnx'))
  onnx[onnx.length - 10] ^= 0xff
  await writeFile(join(model, '4', 'model.onnx'), onnx)
  // Not pinned, so the server is ready and the model loads on first use.
  await repo.editConfig('credit-risk', (c) => (c.pinned = false))
  backend = await startBackend({ MODEL_REPOSITORY: repo.root, ADMIN_TOKEN })
})

afterAll(async () => {
  await backend?.stop()
  await repo?.remove()
})

describe('load-failure reasons reach the admin, not clients', () => {
  it('infer, metadata and readiness answer fixed refusals without paths or hashes', async () => {
    const unversioned = await post<{ error: string }>(`${backend.url}/v2/models/credit-risk/infer`, creditRequest(1))
    expect(unversioned).toMatchObject({ status: 503, body: { error: 'model "credit-risk" has no version ready' } })
    for (const version of ['3', '4']) {
      const pinned = await post<{ error: string }>(`${backend.url}/v2/models/credit-risk/versions/${version}/infer`, creditRequest(1))
      expect(pinned).toMatchObject({ status: 503, body: { error: `model "credit-risk" version ${version} is not ready` } })
      const metadata = await get(`/v2/models/credit-risk/versions/${version}`)
      expect(metadata.status).toBe(503)
      expect(metadata.text).not.toMatch(INTERNAL)
      expect(await get(`/v2/models/credit-risk/versions/${version}/ready`)).toEqual({ status: 503, text: JSON.stringify({ name: 'credit-risk', version, ready: false }) })
    }
    const metadata = await get('/v2/models/credit-risk')
    expect(metadata.status).toBe(503)
    expect(metadata.text).not.toMatch(INTERNAL)
  })

  it('readiness of a version the policy does not select is 404, as infer and metadata find it', async () => {
    for (const version of ['1', '2']) {
      const infer = await post<{ error: string }>(`${backend.url}/v2/models/credit-risk/versions/${version}/infer`, creditRequest(1))
      expect(infer).toMatchObject({ status: 404, body: { error: `model "credit-risk" has no version ${version} available` } })
      expect(await get(`/v2/models/credit-risk/versions/${version}/ready`)).toEqual({ status: 404, text: JSON.stringify({ error: `model "credit-risk" has no version ${version} available` }) })
    }
  })

  it('the repository index (admin) and the logs keep every reason', async () => {
    const index = await post<Array<{ version?: string; reason: string }>>(`${backend.url}/v2/repository/index`, {}, { authorization: `Bearer ${ADMIN_TOKEN}` })
    const reason = (v: string) => index.body.find((e) => e.version === v)?.reason
    expect(reason('3')).toMatch(/MANIFEST line 4 names "\.\.\/\.\.\/\.\.\/\.\.\/etc\/hostname"/)
    expect(reason('4')).toMatch(/^model\.onnx sha256 [0-9a-f]{64} does not match MANIFEST/)
    const refused = backend.logs.filter((l) => l.msg === 'model version refused').map((l) => `${l.version}: ${l.reason}`)
    expect(refused).toEqual(expect.arrayContaining([expect.stringMatching(/^3: MANIFEST line 4 names/), expect.stringMatching(/^4: model\.onnx sha256/)]))
  })
})
