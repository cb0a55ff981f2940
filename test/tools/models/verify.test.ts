import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { newModel } from '../../../tools/models/scaffold.ts'
import { verifyPath } from '../../../tools/models/verify.ts'
import { onnxClassifier, tempWithModel } from './fixture.ts'

let temp: Awaited<ReturnType<typeof tempWithModel>> | undefined
afterEach(async () => {
  await temp?.remove()
  temp = undefined
})

const scaffold = async (name: string, onnxFile: string, version = 1) =>
  newModel({ onnxFile, name, repository: join(temp!.dir, 'repo'), version, features: false, edgeUrl: 'http://127.0.0.1:8787' })

const editConfig = async (modelDir: string, edit: (c: Record<string, unknown>) => void) => {
  const path = join(modelDir, 'config.json')
  const config = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>
  edit(config)
  await writeFile(path, JSON.stringify(config))
}

describe('models verify', () => {
  it('says ok per version of a model models new wrote, for the model folder and for the repository', async () => {
    temp = await tempWithModel()
    const made = await scaffold('fine', temp.onnxFile)
    await scaffold('fine', temp.onnxFile, 2)
    const expected = [
      { ok: true, line: 'ok fine version 1: MANIFEST matches; not selected by version_policy, so not loaded' },
      { ok: true, line: 'ok fine version 2: config, MANIFEST, graph against config, warm-up' },
    ]
    expect(await verifyPath(made.modelDir)).toEqual(expected)
    expect(await verifyPath(join(temp.dir, 'repo'))).toEqual(expected)
  })

  it('prints one line per problem: a refused config, a MANIFEST mismatch, a graph the config does not describe, a folder without config.json', async () => {
    temp = await tempWithModel()
    const triton = await scaffold('triton', temp.onnxFile)
    await editConfig(triton.modelDir, (c) => {
      c.platform = 'onnxruntime_onnx'
      c.input = c.inputs
      delete c.inputs
    })
    const tampered = await scaffold('tampered', temp.onnxFile)
    await writeFile(join(tampered.versionDir, 'model.onnx'), onnxClassifier(5, 3, { input: 'x', output: 'other' }))
    const renamed = await scaffold('renamed', temp.onnxFile)
    await editConfig(renamed.modelDir, (c) => ((c.outputs as Array<{ name: string }>)[0].name = 'scores'))
    const forgot = await scaffold('forgot', temp.onnxFile)
    await rm(join(forgot.modelDir, 'config.json'))
    await writeFile(join(forgot.modelDir, 'config.pbtxt'), 'name: "forgot"\n')

    const findings = await verifyPath(join(temp.dir, 'repo'))
    expect(findings.every((f) => !f.ok && !f.line.includes('\n'))).toBe(true)
    const lines = findings.map((f) => f.line)
    expect(lines).toHaveLength(4)
    expect(lines[0]).toBe("forgot: no config.json, so the backend does not see this folder as a model (config.pbtxt is Triton's; write config.json, see docs/bring-your-own-model.md)")
    expect(lines[1]).toMatch(/^renamed version 1: config declares inputs \[x\] outputs \[scores\], model has inputs \[x\] outputs \[probabilities\]$/)
    expect(lines[2]).toMatch(/^tampered version 1: model\.onnx sha256 [0-9a-f]{64} does not match MANIFEST [0-9a-f]{64}$/)
    expect(lines[3]).toMatch(/^triton: config\.json is invalid: .*platform.*inputs/)
  })
})
