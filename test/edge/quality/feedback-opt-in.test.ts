import { describe, expect, it } from 'vitest'
import { feedbackOn, feedbackTerms } from '../../../edge/quality/feedback-opt-in.ts'

const postprocess = { output: 'probabilities', labels: ['low_risk', 'high_risk'] }
const none = { feedbackModels: new Set<string>(), feedbackTtlSeconds: 600 }

describe('feedbackTerms', () => {
  it('opts a model in by its config block, with its ttl and labels, else the edge default and the postprocess labels', () => {
    expect(feedbackTerms(none, { name: 'm', postprocess, feedback: { ttl_seconds: 60, labels: ['repaid', 'defaulted'] } })).toEqual({ ttlSeconds: 60, labels: ['repaid', 'defaulted'] })
    expect(feedbackTerms(none, { name: 'm', postprocess, feedback: {} })).toEqual({ ttlSeconds: 600, labels: ['low_risk', 'high_risk'] })
  })

  it('keeps FEEDBACK_MODELS as an override for a model without a block, and leaves others off', () => {
    expect(feedbackTerms({ ...none, feedbackModels: new Set(['m']) }, { name: 'm', postprocess })).toEqual({ ttlSeconds: 600, labels: ['low_risk', 'high_risk'] })
    expect(feedbackTerms({ ...none, feedbackModels: 'all' }, { name: 'm', postprocess })).toEqual({ ttlSeconds: 600, labels: ['low_risk', 'high_risk'] })
    expect(feedbackOn(none, { name: 'm', postprocess })).toBe(false)
    expect(feedbackOn({ ...none, feedbackModels: new Set(['other']) }, { name: 'm', postprocess })).toBe(false)
  })

  it('the override does not replace a block\'s ttl or labels', () => {
    expect(feedbackTerms({ ...none, feedbackModels: 'all' }, { name: 'm', postprocess, feedback: { ttl_seconds: 60 } })).toEqual({ ttlSeconds: 60, labels: ['low_risk', 'high_risk'] })
  })

  it('is off for a model without two labels, whatever opts it in; block labels of another count are not used', () => {
    expect(feedbackOn({ ...none, feedbackModels: 'all' }, { name: 'm', postprocess: { ...postprocess, labels: ['a', 'b', 'c'] }, feedback: {} })).toBe(false)
    expect(feedbackOn({ ...none, feedbackModels: 'all' }, { name: 'm', feedback: {} })).toBe(false)
    expect(feedbackTerms(none, { name: 'm', postprocess, feedback: { labels: ['x', 'y', 'z'] } })?.labels).toEqual(['low_risk', 'high_risk'])
  })
})
