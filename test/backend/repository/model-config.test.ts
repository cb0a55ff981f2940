import { describe, expect, it } from 'vitest'
import { modelConfig, type ModelConfigInput } from '../../../backend/repository/model-config.ts'

const config = (dynamicBatching: Record<string, unknown>): ModelConfigInput => ({
  name: 'tiny',
  platform: 'onnxruntime',
  max_batch_size: 8,
  inputs: [{ name: 'features', datatype: 'FP32', dims: [4] }],
  outputs: [{ name: 'probabilities', datatype: 'FP32', dims: [2] }],
  dynamic_batching: dynamicBatching as ModelConfigInput['dynamic_batching'],
})

const issues = (dynamicBatching: Record<string, unknown>): string[] => {
  const parsed = modelConfig.safeParse(config(dynamicBatching))
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
}

describe('dynamic_batching.dispatch', () => {
  it('is idle unless the config names a policy', () => {
    expect(modelConfig.parse(config({})).dynamic_batching?.dispatch).toBe('idle')
    expect(modelConfig.parse(config({ max_queue_delay_us: 500 })).dynamic_batching).toMatchObject({ dispatch: 'idle', max_queue_delay_us: 500 })
  })

  it('takes delay (Triton) and idle as written', () => {
    expect(modelConfig.parse(config({ dispatch: 'delay' })).dynamic_batching?.dispatch).toBe('delay')
    expect(modelConfig.parse(config({ dispatch: 'idle' })).dynamic_batching?.dispatch).toBe('idle')
  })

  it.each([['Idle'], ['fixed'], [''], [1], [null]])('refuses %j with a message naming both policies', (value) => {
    expect(issues({ dispatch: value })).toEqual([
      `dynamic_batching.dispatch: dispatch must be "idle" (send at once to a free instance) or "delay" (wait up to max_queue_delay_us, as Triton does), not ${JSON.stringify(value)}`,
    ])
  })
})
