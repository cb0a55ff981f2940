import type { InferResponse, ServedParameters } from '../../shared/protocol.ts'
import { toJsonData, type HostTensor } from '../executor/tensor.ts'

/** What one served request answers, before it is encoded. */
export interface InferAnswer {
  id: string
  parameters: ServedParameters
  /** In the order the client asked for them. */
  outputs: ReadonlyArray<{ name: string; tensor: HostTensor }>
}

/** The answer as an Open Inference Protocol response object (the Lambda tier returns it as is). */
export const inferResponse = (model: string, version: string, { id, parameters, outputs }: InferAnswer): InferResponse => ({
  model_name: model,
  model_version: version,
  id,
  parameters,
  outputs: outputs.map(({ name, tensor }) => ({ name, shape: tensor.dims, datatype: tensor.datatype, data: toJsonData(tensor) })),
})

/** A number as JSON.stringify writes it: non-finite values become null. */
const jsonNumber = (v: number): string => (Number.isFinite(v) ? String(v) : 'null')

const jsonData = (tensor: HostTensor): string => {
  const { data } = tensor
  let text = '['
  if (data instanceof Float32Array || data instanceof Float64Array) {
    // The common case, straight from the typed array: no intermediate array of numbers.
    for (let i = 0; i < data.length; i++) text += (i === 0 ? '' : ',') + jsonNumber(data[i])
    return `${text}]`
  }
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    // Exact digits: a JSON number has no precision limit, only a JS number does (above 2^53).
    for (let i = 0; i < data.length; i++) text += (i === 0 ? '' : ',') + String(data[i])
    return `${text}]`
  }
  const values = toJsonData(tensor)
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    text += (i === 0 ? '' : ',') + (typeof v === 'number' ? jsonNumber(v) : typeof v === 'string' ? JSON.stringify(v) : String(v))
  }
  return `${text}]`
}

/**
 * The HTTP body of a version's answers, byte for byte what JSON.stringify(inferResponse(…))
 * writes except 64-bit integers, which keep every digit; from a prefix built once per version: building the response object and walking it
 * again to stringify cost more than the rest of the response path.
 */
export class ResponseTemplate {
  private readonly prefix: string

  constructor(model: string, version: string) {
    this.prefix = `{"model_name":${JSON.stringify(model)},"model_version":${JSON.stringify(version)},"id":`
  }

  encode({ id, parameters: p, outputs }: InferAnswer): string {
    let text = `${this.prefix}${JSON.stringify(id)},"parameters":{"queue_us":${jsonNumber(p.queue_us)},"compute_us":${jsonNumber(p.compute_us)},"batch_size":${jsonNumber(p.batch_size)},"batch_reason":"${p.batch_reason}"},"outputs":[`
    for (let i = 0; i < outputs.length; i++) {
      const { name, tensor } = outputs[i]
      text += `${i === 0 ? '' : ','}{"name":${JSON.stringify(name)},"shape":[${tensor.dims.join(',')}],"datatype":"${tensor.datatype}","data":${jsonData(tensor)}}`
    }
    return `${text}]}`
  }
}
