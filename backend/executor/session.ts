import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import ort from 'onnxruntime-node'
import { binding, initOrt, type Binding } from 'onnxruntime-node/dist/binding.js'
import type { WorkerInit } from './messages.ts'
import { DATATYPE_OF_ORT, ORT_TYPES, type HostTensor, type TensorMap, type TensorValues } from './tensor.ts'

// CUDA's provider library is installed only by the GPU image (`--onnxruntime-node-install=cuda12`);
// without it onnxruntime logs a loud failure, so look before trying.
const bindingDir = join(dirname(createRequire(import.meta.url).resolve('onnxruntime-node')), '..', 'bin', 'napi-v6', process.platform, process.arch)
const PROVIDER_LIBRARIES: Readonly<Record<string, string>> = { cuda: 'libonnxruntime_providers_cuda.so' }
const installed = (provider: string): boolean => {
  const library = PROVIDER_LIBRARIES[provider]
  return library === undefined || existsSync(join(bindingDir, library))
}

const toOrt = (t: HostTensor) => new ort.Tensor(ORT_TYPES[t.datatype] as 'float32', t.data as Float32Array, t.dims)

const fromOrt = (t: ort.Tensor): HostTensor => ({
  datatype: DATATYPE_OF_ORT[t.type],
  dims: [...t.dims],
  data: t.data as TensorValues,
})

/**
 * One onnxruntime session, run synchronously on the thread that calls it. The public
 * `InferenceSession.run` of onnxruntime-node 1.30 is this same native call deferred to
 * `setImmediate` (plus argument checks this tier has already made); calling the binding lets
 * the caller decide when a run happens, so an unbatched request runs when it is dispatched
 * instead of one per event-loop turn.
 */
export class ModelSession {
  readonly inputNames: string[]
  readonly outputNames: string[]

  private constructor(private readonly native: Binding.InferenceSession, readonly provider: string) {
    this.inputNames = native.inputMetadata.map((m) => m.name)
    this.outputNames = native.outputMetadata.map((m) => m.name)
  }

  /** A session on the first of the providers that can load the model; `cpu` is the last resort. Blocks the thread while it loads. */
  static create({ modelBytes, executionProviders, intraOpThreads }: WorkerInit): ModelSession {
    initOrt()
    const failures: string[] = []
    for (let i = 0; i < executionProviders.length; i++) {
      const providers = executionProviders.slice(i)
      if (!installed(providers[0])) {
        failures.push(`${providers[0]}: provider library not installed`)
        continue
      }
      try {
        const native = new binding.InferenceSession()
        native.loadModel(modelBytes.buffer as ArrayBuffer, modelBytes.byteOffset, modelBytes.byteLength, {
          executionProviders: providers,
          intraOpNumThreads: intraOpThreads,
          interOpNumThreads: 1,
          graphOptimizationLevel: 'all',
        })
        return new ModelSession(native, providers[0])
      } catch (err) {
        failures.push(`${providers[0]}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
    throw new Error(`no execution provider could load the model (${failures.join('; ')})`)
  }

  /** One batch, now; `computeUs` is the time the thread was held. */
  run(feeds: TensorMap, outputs: readonly string[]): { outputs: TensorMap; computeUs: number } {
    const ortFeeds: Record<string, ort.Tensor> = {}
    for (const name in feeds) ortFeeds[name] = toOrt(feeds[name])
    const fetches: Record<string, null> = {}
    for (const name of outputs) {
      if (!this.outputNames.includes(name)) throw new RangeError(`the model has no output "${name}"`)
      fetches[name] = null
    }
    const started = performance.now()
    const results = this.native.run(ortFeeds, fetches, {})
    const computeUs = Math.round((performance.now() - started) * 1000)
    const hostOutputs: TensorMap = {}
    for (const name in results) hostOutputs[name] = fromOrt(results[name] as ort.Tensor)
    return { outputs: hostOutputs, computeUs }
  }

  release(): void {
    this.native.dispose()
  }
}
