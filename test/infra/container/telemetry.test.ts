import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
// Where onnxruntime-node 1.30's telemetry client keeps its state on Linux (issue 31 §2).
const DB = '.cache/Microsoft/DeveloperTools/.onnxruntime/onnxruntime.db'
const homes: string[] = []

/** One session made and run in a fresh process with HOME=<scratch>; returns that HOME. */
const runSession = async (env: Record<string, string>): Promise<string> => {
  const home = await mkdtemp(join(tmpdir(), 'edge-infer-ort-home-'))
  homes.push(home)
  const script = `import ort from 'onnxruntime-node'
const s = await ort.InferenceSession.create('models/credit-risk/2/model.onnx')
await s.run({ features: new ort.Tensor('float32', new Float32Array(23), [1, 23]) })
await s.release()`
  // The client also stays off when CI is set (as in .ci/run): both runs are made as on a user's machine, so only ORT_DISABLE_TELEMETRY differs.
  const { ORT_DISABLE_TELEMETRY: _, CI: _ci, ...inherited } = process.env
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env: { ...inherited, HOME: home, ...env }, stdio: 'inherit' })
    child.on('error', reject)
    child.on('close', resolve)
  })
  expect(code).toBe(0)
  return home
}

afterAll(async () => {
  for (const home of homes) await rm(home, { recursive: true, force: true })
})

describe("onnxruntime's telemetry client", () => {
  it('writes nothing under ~/.cache/Microsoft with ORT_DISABLE_TELEMETRY=1', async () => {
    const home = await runSession({ ORT_DISABLE_TELEMETRY: '1' })
    expect(existsSync(join(home, DB))).toBe(false)
    expect(existsSync(join(home, '.cache/Microsoft'))).toBe(false)
  })

  it('writes its database without it (so the check above can see the file)', async () => {
    const home = await runSession({})
    expect(existsSync(join(home, DB))).toBe(true)
  })

  it.each(['infra/container/Dockerfile', 'infra/container/Dockerfile.gpu', 'infra/aws/Dockerfile.lambda'])('is off in %s (ENV of the final stage)', async (file) => {
    const text = await readFile(join(ROOT, file), 'utf8')
    const finalStage = text.slice(text.lastIndexOf('\nFROM '))
    expect(finalStage).toMatch(/^ENV [^\n]*(\\\n[^\n]*)*?\bORT_DISABLE_TELEMETRY=1\b/m)
  })

  it("is off for the local dev stack's backend", async () => {
    const start = await readFile(join(ROOT, 'dev/start.ts'), 'utf8')
    expect(start).toMatch(/start\('backend',[^\n]*ORT_DISABLE_TELEMETRY: '1'/)
  })
})
