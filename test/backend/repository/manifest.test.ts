import { Hash, createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { appendFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { verifyVersion } from '../../../backend/repository/manifest.ts'
import { Repository } from '../../../backend/repository/repository.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'

const hex = (bytes: string | Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const MIB = 1024 * 1024

/** Every chunk handed to sha256 while `work` runs: the read path's memory is the largest of them. */
const hashedChunks = async (work: () => Promise<unknown>): Promise<number[]> => {
  const update = vi.spyOn(Hash.prototype, 'update')
  try {
    await work()
    return update.mock.calls.map(([data]) => (typeof data === 'string' ? Buffer.byteLength(data) : (data as Uint8Array).byteLength))
  } finally {
    update.mockRestore()
  }
}

let scratch: string
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'edge-infer-manifest-'))
})
afterAll(() => rm(scratch, { recursive: true, force: true }))

/** A version folder holding `files`, with a MANIFEST of `lines` (`[sha256, name]`). */
const versionFolder = async (name: string, files: Record<string, string | Uint8Array>, lines: Array<[string, string]>) => {
  const dir = join(scratch, name)
  await mkdir(dir, { recursive: true })
  for (const [file, bytes] of Object.entries(files)) await writeFile(join(dir, file), bytes)
  await writeFile(join(dir, 'MANIFEST'), lines.map(([sum, file]) => `${sum}  ${file}\n`).join(''))
  return dir
}

describe('verifyVersion hashes as a stream', () => {
  it('hands sha256 chunks of at most 1 MiB, whatever the size of the file', async () => {
    const model = Buffer.alloc(24 * MIB, 7)
    const dir = await versionFolder('big', { 'model.onnx': model }, [[hex(model), 'model.onnx']])
    let check: Awaited<ReturnType<typeof verifyVersion>> | undefined
    const chunks = await hashedChunks(async () => {
      check = await verifyVersion(dir)
    })
    expect(check).toMatchObject({ ok: true, reason: '' })
    expect(Math.max(...chunks)).toBeLessThanOrEqual(MIB)
    expect(chunks.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(model.length)
  })
})

describe('MANIFEST names only files of the version folder', () => {
  const secret = 'not for clients\n'

  it('refuses a name that climbs out of the folder, without reading what it points to', async () => {
    await writeFile(join(scratch, 'secret.txt'), secret)
    const dir = await versionFolder('climb/1', { 'model.onnx': 'm' }, [[hex('m'), 'model.onnx'], ['0'.repeat(64), '../../secret.txt']])
    const check = await verifyVersion(dir)
    expect(check.ok).toBe(false)
    expect(check.reason).toMatch(/names "\.\.\/\.\.\/secret\.txt", which is not a file of the version folder/)
    expect(check.reason).not.toContain(hex(secret))
  })

  it('refuses an absolute name such as /dev/zero instead of reading it forever', async () => {
    const dir = await versionFolder('absolute', { 'model.onnx': 'm' }, [[hex('m'), 'model.onnx'], ['0'.repeat(64), '/dev/zero']])
    expect((await verifyVersion(dir)).reason).toMatch(/names "\/dev\/zero", which is not a file/)
  })

  it('refuses a listed symlink, even to a file that matches', async () => {
    await writeFile(join(scratch, 'outside.bin'), secret)
    const dir = await versionFolder('link', { 'model.onnx': 'm' }, [[hex('m'), 'model.onnx'], [hex(secret), 'extra.bin']])
    await symlink(join(scratch, 'outside.bin'), join(dir, 'extra.bin'))
    expect(await verifyVersion(dir)).toMatchObject({ ok: false, reason: 'extra.bin is listed in MANIFEST but is not a regular file' })
  })

  it('refuses a listed FIFO without waiting for a writer', async () => {
    const dir = await versionFolder('fifo', { 'model.onnx': 'm' }, [[hex('m'), 'model.onnx'], ['0'.repeat(64), 'pipe']])
    execFileSync('mkfifo', [join(dir, 'pipe')])
    expect(await verifyVersion(dir)).toMatchObject({ ok: false, reason: 'pipe is listed in MANIFEST but is not a regular file' })
  })

  it('refuses an unlisted symlink beside the listed files', async () => {
    const dir = await versionFolder('stray-link', { 'model.onnx': 'm' }, [[hex('m'), 'model.onnx']])
    await symlink('/dev/zero', join(dir, 'zero'))
    expect(await verifyVersion(dir)).toMatchObject({ ok: false, reason: 'files not in MANIFEST: zero' })
  })
})

describe('Repository.read hashes each file once until it changes', () => {
  let fixture: FixtureRepository
  beforeAll(async () => {
    fixture = await createFixtureRepository()
  })
  afterAll(() => fixture.remove())
  afterEach(() => vi.restoreAllMocks())

  const hashedBytes = async (repository: Repository) => {
    let verified: boolean[] = []
    const chunks = await hashedChunks(async () => {
      verified = (await repository.read('credit-risk'))!.versions.map((v) => v.verified)
    })
    expect(verified).toEqual([true, true])
    return chunks.reduce((a, b) => a + b, 0)
  }

  it('a second listing reads only the MANIFESTs; a file that changes is hashed again, and a changed byte is caught', async () => {
    const repository = new Repository(fixture.root)
    const model = join(fixture.root, 'credit-risk/2/model.onnx')
    const first = await hashedBytes(repository)
    expect(first).toBeGreaterThan(2 * 6_000)
    // Only the two MANIFESTs (236 bytes each) are hashed again.
    expect(await hashedBytes(repository)).toBeLessThan(600)
    // Appending and taking the byte off again leaves the size and contents as they were, but not the file's ctime.
    await appendFile(model, 'x')
    execFileSync('truncate', ['-s', '-1', model])
    const again = await hashedBytes(repository)
    expect(again).toBeGreaterThan(6_000)
    expect(again).toBeLessThan(first)
    await appendFile(model, 'x')
    const changed = await repository.read('credit-risk')
    expect(changed?.versions.map((v) => v.verified)).toEqual([true, false])
    expect(changed?.versions[1].reason).toMatch(/^model\.onnx sha256 [0-9a-f]{64} does not match MANIFEST/)
  })
})
