import type { BackendModelMetadata, InferCall, Transport } from '../../../edge/backend-client/transport.ts'
import type { InferResponse } from '../../../shared/protocol.ts'

/**
 * IN-PROCESS STAND-IN for the inference backend: no HTTP, no onnxruntime, no I/O. `infer`
 * answers a correctly shaped response (one [p(low), p(high)] row per input row, from a fixed
 * logistic of the row's mean) so the edge pipeline runs end to end and nothing else is timed;
 * `metadata` answers the real credit-risk metadata read from models/credit-risk/config.json.
 * It is a benchmark fixture only: never a model, never a transport to deploy.
 */
export class InProcessBackendStandIn implements Transport {
  readonly name = 'in-process-stand-in'
  #calls = 0

  constructor(private readonly meta: BackendModelMetadata) {}

  /** infer calls answered (lets the benchmark check the backend was really "reached"). */
  get calls(): number {
    return this.#calls
  }

  async models(): Promise<string[]> {
    return [this.meta.name]
  }

  async metadata(model: string): Promise<BackendModelMetadata> {
    if (model !== this.meta.name) throw new Error(`the in-process stand-in only knows "${this.meta.name}", not "${model}"`)
    return this.meta
  }

  async infer({ model, version, request, requestId }: InferCall): Promise<InferResponse> {
    this.#calls++
    const input = request.inputs[0]
    const [rows, width] = input.shape
    const data = input.data as readonly number[]
    const out: number[] = new Array<number>(rows * 2)
    for (let r = 0; r < rows; r++) {
      let sum = 0
      for (let k = 0; k < width; k++) sum += data[r * width + k]
      const high = 1 / (1 + Math.exp(-(sum / width - 0.5)))
      out[r * 2] = 1 - high
      out[r * 2 + 1] = high
    }
    return {
      model_name: model,
      model_version: String(version),
      id: request.id ?? requestId,
      parameters: { queue_us: 0, compute_us: 0, batch_size: rows, batch_reason: 'single' },
      outputs: [{ name: request.outputs?.[0]?.name ?? 'probabilities', shape: [rows, 2], datatype: 'FP32', data: out }],
    }
  }
}
