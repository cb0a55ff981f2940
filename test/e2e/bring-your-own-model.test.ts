import { execFile, spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { initLayers } from '../../tools/training/mlp.ts'
import { networkToOnnx } from '../../tools/training/onnx-writer.ts'
import { createRandom } from '../../tools/training/random.ts'
import { freePort } from '../support/ports.ts'

/**
 * Walks docs/bring-your-own-model.md as a model owner would: an exported ONNX file, `models new`,
 * `models verify`, the stack started on that repository, predictions through the edge with the
 * printed curl lines, and `models reload`. No file of the model is written by hand.
 */
const run = promisify(execFile)
const ROOT = new URL('../../', import.meta.url).pathname
const ADMIN_TOKEN = 'byom-admin-token-0123456789'
// As a person runs it: vitest's NODE_ENV=test would switch off behaviour a user meets.
const { NODE_ENV: _vitest, ...userEnv } = process.env

/** `models …` as a process, the way the page shows it; never rejects, the exit code is part of the answer. */
const models = async (...args: string[]) => {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'tools/models/main.ts', ...args], { cwd: ROOT, env: { ...userEnv, ADMIN_TOKEN } })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

/** A printed curl line as a fetch: URL, -H headers (either quote), -d body; `$EDGE_INFER_KEY` is the key npm start printed. */
const curlToFetch = (line: string, key: string) => {
  const url = /curl -s (\S+)/.exec(line)![1]
  const headers = Object.fromEntries([...line.matchAll(/-H (['"])([^:]+): ([^'"]+)\1/g)].map((m) => [m[2], m[3].replace('$EDGE_INFER_KEY', key)]))
  const body = /-d '(.+)'$/.exec(line.trim())![1]
  return fetch(url, { method: 'POST', headers, body })
}

let dir: string
let ports: { backend: number; edge: number }
let stack: { stop: () => Promise<number | null> } | undefined

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'byom-e2e-'))
  ports = { backend: await freePort(), edge: await freePort() }
})

afterAll(async () => {
  await stack?.stop()
  await rm(dir, { recursive: true, force: true })
})

/** `npm start` on the given repository (dev/start.ts, as test/dev/start.test.ts runs it), resolved once it says it is up. */
const startStack = async (repository: string) => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
    cwd: ROOT,
    env: { ...userEnv, MODEL_REPOSITORY: repository, BACKEND_PORT: String(ports.backend), EDGE_PORT: String(ports.edge), CONTROLLER_TICK_S: '0', ADMIN_TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  stack = { stop: () => (child.kill('SIGTERM'), exited) }
  const lines: string[] = []
  createInterface({ input: child.stderr! }).on('line', (l) => lines.push(l))
  const up = new Promise<void>((resolve) => createInterface({ input: child.stdout! }).on('line', (l) => (lines.push(l), /^edge-infer is up/.test(l) && resolve())))
  const gone = exited.then((code) => Promise.reject(new Error(`npm start exited (${code}) before it was up:\n${lines.join('\n')}`)))
  await Promise.race([up, gone])
  return lines
}

describe('bring your own model (docs/bring-your-own-model.md)', () => {
  it('goes from an ONNX file to predictions through the edge: models new, models verify, npm start, the printed curls, models reload', async () => {
    const onnxFile = join(dir, 'exported.onnx')
    await writeFile(onnxFile, networkToOnnx({ layers: initLayers([6, 8, 2], createRandom(3)) }, { name: 'churn', input: 'input', output: 'probabilities' }))
    const repository = join(dir, 'models')

    const made = await models('new', onnxFile, '--name', 'churn', '--repository', repository, '--features', '--edge', `http://127.0.0.1:${ports.edge}`)
    expect([made.code, made.stderr]).toEqual([0, ''])
    const curls = made.stdout.split('\n').filter((l) => /^\s+curl -s /.test(l))
    expect(curls.map((c) => /curl -s (\S+)/.exec(c)![1])).toEqual([`http://127.0.0.1:${ports.edge}/v2/models/churn/infer`, `http://127.0.0.1:${ports.edge}/v1/models/churn/predict`])

    const verified = await models('verify', join(repository, 'churn'))
    expect([verified.code, verified.stdout]).toEqual([0, 'ok churn version 1: config, MANIFEST, graph against config, warm-up\n'])

    // A Triton user's config.pbtxt written as JSON beside it: refused with the backend's reason, as a 409 at the edge.
    await mkdir(join(repository, 'triton-shaped', '1'), { recursive: true })
    await writeFile(join(repository, 'triton-shaped', 'config.json'), JSON.stringify({ name: 'triton-shaped', platform: 'onnxruntime_onnx', max_batch_size: 8, input: [{ name: 'input', data_type: 'TYPE_FP32', dims: [6] }], output: [{ name: 'probabilities', data_type: 'TYPE_FP32', dims: [2] }] }))
    const refusedByVerify = await models('verify', repository)
    expect(refusedByVerify.code).toBe(1)
    expect(refusedByVerify.stdout).toMatch(/^triton-shaped: config\.json is invalid: .*platform/m)

    const printed = await startStack(repository)
    const key = /^local API key.*: (ei_local_\S+)$/.exec(printed.find((l) => l.startsWith('local API key')) ?? '')![1]

    const tensor = await curlToFetch(curls[0], key)
    expect(tensor.status).toBe(200)
    const tensorBody = (await tensor.json()) as { model_name: string; outputs: Array<{ name: string; shape: number[]; data: number[] }> }
    expect(tensorBody).toMatchObject({ model_name: 'churn', outputs: [{ name: 'probabilities', shape: [1, 2] }] })
    expect(tensorBody.outputs[0].data.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5)

    const predict = await curlToFetch(curls[1], key)
    expect(predict.status).toBe(200)
    expect(await predict.json()).toMatchObject({ model: 'churn', version: '1', predictions: [{ label: expect.stringMatching(/^class_[01]$/) }] })

    const refused = await fetch(`http://127.0.0.1:${ports.edge}/v2/models/triton-shaped/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ inputs: [{ name: 'input', shape: [1, 6], datatype: 'FP32', data: [0, 0, 0, 0, 0, 0] }] }),
    })
    const refusal = (await refused.json()) as { error?: string; detail?: string }
    expect(refused.status).toBe(409)
    expect(refusal.error ?? refusal.detail).toMatch(/model "triton-shaped" configuration refused: config\.json is invalid: .*platform/)

    const reloaded = await models('reload', 'churn', '--backend', `http://127.0.0.1:${ports.backend}`)
    expect([reloaded.code, reloaded.stdout]).toEqual([0, 'churn version 1: kept\n'])

    expect(await stack!.stop()).toBe(0)
    stack = undefined
  }, 180_000)
})
