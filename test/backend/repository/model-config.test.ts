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

describe('feedback', () => {
  const withFeedback = (feedback: unknown, labels = ['stays', 'churns']): ModelConfigInput => ({
    ...config({}),
    postprocess: { output: 'probabilities', labels },
    feedback: feedback as ModelConfigInput['feedback'],
  })
  const feedbackIssues = (feedback: unknown, labels?: string[]): string[] => {
    const parsed = modelConfig.safeParse(withFeedback(feedback, labels))
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
  }

  it('takes a ttl and labels, either or neither', () => {
    expect(modelConfig.parse(withFeedback({ ttl_seconds: 3_600, labels: ['retained', 'churned'] })).feedback).toEqual({ ttl_seconds: 3_600, labels: ['retained', 'churned'] })
    expect(modelConfig.parse(withFeedback({})).feedback).toEqual({})
    expect(modelConfig.parse(config({})).feedback).toBeUndefined()
  })

  it.each([[0], [-5], [1.5], ['3600'], [null]])('refuses ttl_seconds %j', (ttl) => {
    expect(feedbackIssues({ ttl_seconds: ttl })).toEqual([expect.stringMatching(/^feedback\.ttl_seconds: /)])
  })

  it('refuses empty, repeated or miscounted labels', () => {
    expect(feedbackIssues({ labels: [] })).toContain('feedback.labels: Too small: expected array to have >=1 items')
    expect(feedbackIssues({ labels: ['', 'churned'] })).toEqual(['feedback.labels.0: Too small: expected string to have >=1 characters'])
    expect(feedbackIssues({ labels: ['yes', 'yes'] })).toEqual(['feedback.labels: labels must be distinct'])
    expect(feedbackIssues({ labels: ['a', 'b', 'c'] })).toEqual(["feedback.labels: feedback labels name the postprocess's 2 classes in order; got 3"])
  })

  it('refuses a field it does not know, and a model that has no two-label postprocess', () => {
    expect(feedbackIssues({ ttl: 60 })).toEqual([expect.stringMatching(/^feedback: /)])
    expect(feedbackIssues({}, ['a', 'b', 'c'])).toEqual(['feedback: feedback needs a postprocess with exactly two labels'])
    const parsed = modelConfig.safeParse({ ...config({}), feedback: {} })
    expect(parsed.success ? [] : parsed.error.issues.map((i) => i.message)).toEqual(['feedback needs a postprocess with exactly two labels'])
  })
})
