import { describe, expect, it } from 'vitest'
import { modelConfig } from '../../../backend/repository/model-config.ts'
import { configFor, curlsFor } from '../../../tools/models/scaffold.ts'
import { readSignature } from '../../../tools/models/signature.ts'
import { onnxClassifier } from './fixture.ts'

describe('models new: config.json from the graph', () => {
  it('reads names, datatypes and shapes, batches on the free leading dimension, and writes what the backend\'s schema accepts', () => {
    const signature = readSignature(onnxClassifier(5, 3))
    expect(signature).toEqual({ inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 5] }], outputs: [{ name: 'probabilities', datatype: 'FP32', shape: [-1, 3] }] })
    const config = configFor('my-model', signature, true)
    const parsed = modelConfig.parse(config)
    expect(parsed).toMatchObject({ max_batch_size: 64, inputs: [{ name: 'x', dims: [5] }], outputs: [{ name: 'probabilities', dims: [3] }], dynamic_batching: { dispatch: 'idle' } })
    expect(parsed.features?.features.map((f) => f.name)).toEqual(['feature_0', 'feature_1', 'feature_2', 'feature_3', 'feature_4'])
    expect(parsed.postprocess).toEqual({ output: 'probabilities', labels: ['class_0', 'class_1', 'class_2'] })
    // Under idle dispatch these decide nothing, so they are not written.
    expect(config.dynamic_batching).not.toHaveProperty('max_queue_delay_us')
    expect(config.dynamic_batching).not.toHaveProperty('preferred_batch_sizes')
  })

  it('prints a tensor-route curl always and a predict curl only with a feature spec and postprocess', () => {
    const signature = readSignature(onnxClassifier(2, 2))
    const tensorOnly = curlsFor(configFor('m', signature, false), 'http://127.0.0.1:9999/')
    expect(tensorOnly).toEqual([`curl -s http://127.0.0.1:9999/v2/models/m/infer -H 'content-type: application/json' -H "x-api-key: $EDGE_INFER_KEY" -d '{"inputs":[{"name":"x","shape":[1,2],"datatype":"FP32","data":[0,0]}]}'`])
    expect(curlsFor(configFor('m', signature, true), 'http://127.0.0.1:9999')[1]).toMatch(/\/v1\/models\/m\/predict .* -d '\{"instances":\[\{"feature_0":0,"feature_1":0\}\]\}'$/)
  })

  it('refuses a file that is not ONNX in one line', () => {
    expect(() => readSignature(new TextEncoder().encode('name: "triton"\nplatform: "onnxruntime_onnx"\n'))).toThrow(/^not an ONNX model/)
  })
})
