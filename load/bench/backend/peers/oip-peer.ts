import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import ort from 'onnxruntime-node'

/**
 * The smallest honest Open Inference Protocol server: Hono on @hono/node-server and one
 * onnxruntime-node session, the OIP JSON body in and the OIP response out. PEER_MAX_BATCH > 0
 * batches as Triton's dynamic batcher does (a batch goes when that many rows wait or the oldest
 * request has waited PEER_DELAY_US; one run at a time); 0 runs `session.run` once per request.
 *
 * A child process of bench:backend: PEER_MODEL_PATH, PEER_MODEL_NAME, PEER_MODEL_VERSION, PORT, HOST.
 */
const env = (name: string): string => process.env[name] ?? ''
const [modelName, modelVersion] = [env('PEER_MODEL_NAME'), env('PEER_MODEL_VERSION')]
const maxBatch = Number(env('PEER_MAX_BATCH'))
const delayMs = Number(env('PEER_DELAY_US')) / 1000
const session = await ort.InferenceSession.create(env('PEER_MODEL_PATH'), { executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' })
const [input, output] = [session.inputNames[0], session.outputNames[0]]

interface Output { data: Float32Array; width: number }
const run = async (data: Float32Array, rows: number): Promise<Output> => {
  const result = (await session.run({ [input]: new ort.Tensor('float32', data, [rows, data.length / rows]) }))[output]
  return { data: result.data as Float32Array, width: result.dims[1] }
}

interface Pending { data: Float32Array; rows: number; at: number; done(out: Output): void; fail(err: unknown): void }
const queue: Pending[] = []
const stats = { batches: 0, rows: 0 }
let queuedRows = 0
let busy = false
let timer: NodeJS.Timeout | undefined

const schedule = (): void => {
  if (queuedRows >= maxBatch) void dispatch()
  else if (queue.length > 0 && timer === undefined) timer = setTimeout(dispatch, Math.max(0, queue[0].at + delayMs - performance.now()))
}

const dispatch = async (): Promise<void> => {
  clearTimeout(timer)
  timer = undefined
  if (busy || queue.length === 0) return
  const batch: Pending[] = []
  let rows = 0
  let values = 0
  while (queue.length > 0 && rows + queue[0].rows <= maxBatch) {
    const next = queue.shift()!
    batch.push(next)
    rows += next.rows
    values += next.data.length
  }
  queuedRows -= rows
  stats.batches++
  stats.rows += rows
  busy = true
  try {
    const joined = new Float32Array(values)
    let at = 0
    for (const p of batch) {
      joined.set(p.data, at)
      at += p.data.length
    }
    const out = await run(joined, rows)
    let row = 0
    for (const p of batch) {
      p.done({ data: out.data.subarray(row * out.width, (row + p.rows) * out.width), width: out.width })
      row += p.rows
    }
  } catch (err) {
    for (const p of batch) p.fail(err)
  } finally {
    busy = false
    schedule()
  }
}

const infer = (data: Float32Array, rows: number): Promise<Output> => {
  if (maxBatch === 0) {
    stats.batches++
    stats.rows += rows
    return run(data, rows)
  }
  return new Promise((done, fail) => {
    queue.push({ data, rows, at: performance.now(), done, fail })
    queuedRows += rows
    schedule()
  })
}

const app = new Hono()
app.post('/v2/models/:model/infer', async (c) => {
  const body = (await c.req.json()) as { id?: string; inputs: Array<{ shape: number[]; data: number[] }> }
  const { shape: [rows, width], data } = body.inputs[0]
  if (data.length !== rows * width || (maxBatch > 0 && rows > maxBatch)) return c.json({ error: `expected ${rows} × ${width} values, at most ${maxBatch || rows} rows` }, 400)
  const out = await infer(Float32Array.from(data), rows)
  return c.json({ model_name: modelName, model_version: modelVersion, id: body.id ?? '', outputs: [{ name: output, shape: [rows, out.width], datatype: 'FP32', data: Array.from(out.data) }] })
})
app.get('/v2/health/ready', (c) => c.json({ ready: true }))
app.get('/peer/stats', (c) => c.json(stats))

const server = serve({ fetch: app.fetch, port: Number(env('PORT') || 0), hostname: env('HOST') || '127.0.0.1' }, ({ address, port }: AddressInfo) => {
  process.stdout.write(`${JSON.stringify({ level: 'info', msg: 'listening', url: `http://${address}:${port}` })}\n`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
