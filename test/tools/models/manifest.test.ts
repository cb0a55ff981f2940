import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { verifyVersion } from '../../../backend/repository/manifest.ts'
import { rewriteManifest } from '../../../tools/models/manifest.ts'
import { formatManifest } from '../../../tools/training/manifest.ts'
import { tempWithModel } from './fixture.ts'

let temp: Awaited<ReturnType<typeof tempWithModel>> | undefined
afterEach(async () => {
  await temp?.remove()
  temp = undefined
})

describe('models manifest', () => {
  it('lists every file of the version folder but MANIFEST itself, and the backend accepts it', async () => {
    temp = await tempWithModel()
    await writeFile(join(temp.dir, 'baseline.json'), '{}\n')
    await mkdir(join(temp.dir, 'notes'))
    expect(await rewriteManifest(temp.dir)).toEqual(['baseline.json', 'model.onnx'])
    const text = await readFile(join(temp.dir, 'MANIFEST'), 'utf8')
    expect(text).not.toMatch(/MANIFEST/)
    expect(text.trim().split('\n')).toHaveLength(2)
    expect(await verifyVersion(temp.dir)).toMatchObject({ ok: true })
  })

  it('repairs the `sha256sum * > MANIFEST` trap (MANIFEST listing the empty file it was), which the backend refuses', async () => {
    temp = await tempWithModel()
    const model = await readFile(join(temp.dir, 'model.onnx'))
    // What the shell does: truncates MANIFEST first, then hashes it (empty) with the rest.
    const trap = formatManifest({ MANIFEST: new Uint8Array(), 'model.onnx': model })
    await writeFile(join(temp.dir, 'MANIFEST'), trap)
    const refused = await verifyVersion(temp.dir)
    expect(refused.ok).toBe(false)
    expect(refused.reason).toMatch(/^MANIFEST sha256 [0-9a-f]{64} does not match MANIFEST e3b0c442/)
    await rewriteManifest(temp.dir)
    expect(await verifyVersion(temp.dir)).toMatchObject({ ok: true })
    // Rewriting again changes nothing: MANIFEST never feeds itself.
    const once = await readFile(join(temp.dir, 'MANIFEST'), 'utf8')
    await rewriteManifest(temp.dir)
    expect(await readFile(join(temp.dir, 'MANIFEST'), 'utf8')).toBe(once)
  })
})
