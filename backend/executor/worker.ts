import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { parentPort, workerData } from 'node:worker_threads'
import { performance } from 'node:perf_hooks'
import ort from 'onnxruntime-node'
import type { WorkerInit, WorkerReply, WorkerRequest } from './messages.ts'
import { DATATYPE_OF_ORT, ORT_TYPES, type HostTensor, type TensorMap, type TensorValues } from './tensor.ts'

// One onnxruntime session per thread: session.run blocks the thread it runs on, so the server's
// event loop stays free only if inference happens here.
const port = parentPort
if (!port) throw new Error('worker.ts must run in a worker thread')

// onnxruntime-common turns float16 data into a Float16Array wherever the runtime has one, and
// onnxruntime-node's binding cannot read that type; without it, FP16 tensors cross as their bits.
Reflect.deleteProperty(globalThis, 'Float16Array')
const reply = (message: WorkerReply) => port.postMessage(message)

// CUDA's provider library is installed only by the GPU image (`--onnxruntime-node-install=cuda12`);
// without it onnxruntime logs a loud failure, so look before trying.
const bindingDir = join(dirname(createRequire(import.meta.url).resolve('onnxruntime-node')), '..', 'bin', 'napi-v6', process.platform, process.arch)
const PROVIDER_LIBRARIES: Readonly<Record<string, string>> = { cuda: 'libonnxruntime_providers_cuda.so' }
const installed = (provider: string): boolean => {
  const library = PROVIDER_LIBRARIES[provider]
  return library === undefined || existsSync(join(bindingDir, library))
}

const createSession = async ({ modelBytes, executionProviders, intraOpThreads }: WorkerInit) => {
  const failures: string[] = []
  for (let i = 0; i < executionProviders.length; i++) {
    const providers = executionProviders.slice(i)
    if (!installed(providers[0])) {
      failures.push(`${providers[0]}: provider library not installed`)
      continue
    }
    try {
      const session = await ort.InferenceSession.create(modelBytes, {
        executionProviders: providers,
        intraOpNumThreads: intraOpThreads,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
      })
      return { session, provider: providers[0] }
    } catch (err) {
      failures.push(`${providers[0]}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  throw new Error(`no execution provider could load the model (${failures.join('; ')})`)
}

const toOrt = (t: HostTensor) => new ort.Tensor(ORT_TYPES[t.datatype] as 'float32', t.data as Float32Array, t.dims)

const fromOrt = (t: ort.Tensor): HostTensor => ({
  datatype: DATATYPE_OF_ORT[t.type],
  dims: [...t.dims],
  data: t.data as TensorValues,
})

const main = async () => {
  const { session, provider } = await createSession(workerData as WorkerInit)
  reply({ type: 'ready', provider, inputNames: [...session.inputNames], outputNames: [...session.outputNames] })
  port.on('message', async (message: WorkerRequest) => {
    if (message.type === 'close') {
      await session.release()
      port.close()
      return
    }
    try {
      const feeds = Object.fromEntries(Object.entries(message.feeds).map(([name, t]) => [name, toOrt(t)]))
      const started = performance.now()
      const results = await session.run(feeds, message.outputs)
      const computeUs = Math.round((performance.now() - started) * 1000)
      const outputs: TensorMap = Object.fromEntries(Object.entries(results).map(([name, t]) => [name, fromOrt(t)]))
      reply({ type: 'result', id: message.id, outputs, computeUs })
    } catch (err) {
      reply({ type: 'failed', id: message.id, message: err instanceof Error ? err.message : String(err) })
    }
  })
}

main().catch((err: unknown) => reply({ type: 'failed', message: err instanceof Error ? err.message : String(err) }))
