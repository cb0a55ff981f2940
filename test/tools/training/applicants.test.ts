import { describe, expect, it } from 'vitest'
import { creditRiskSpec, generateApplicants } from '../../../tools/training/applicants.ts'
import { rocAuc } from '../../../tools/training/metrics.ts'

describe('generateApplicants', () => {
  const sample = generateApplicants(20_000, 7)

  it('stays inside the feature spec, so every generated row is a valid request', () => {
    for (const f of creditRiskSpec.features) {
      const values = sample.applicants.map((a) => a[f.name as keyof typeof a])
      if (f.type === 'category') expect(new Set(values.filter((v) => !f.categories.includes(String(v))))).toEqual(new Set())
      else if (f.type === 'boolean') expect(values.every((v) => typeof v === 'boolean')).toBe(true)
      else {
        const numbers = values as number[]
        expect(Math.min(...numbers), f.name).toBeGreaterThanOrEqual(f.min)
        expect(Math.max(...numbers), f.name).toBeLessThanOrEqual(f.max)
        if (f.type === 'integer') expect(numbers.every(Number.isInteger), f.name).toBe(true)
      }
    }
  })

  it('has a minority of high-risk labels that a perfect model ranks at AUC ~0.9', () => {
    const rate = sample.labels.reduce((n, y) => n + y, 0) / sample.labels.length
    expect(rate).toBeGreaterThan(0.2)
    expect(rate).toBeLessThan(0.4)
    const auc = rocAuc(sample.risk, sample.labels)
    expect(auc).toBeGreaterThan(0.85)
    expect(auc).toBeLessThan(0.95)
  })

  it('repeats for a seed', () => {
    expect(generateApplicants(50, 7).applicants).toEqual(sample.applicants.slice(0, 50))
    expect(generateApplicants(50, 8).applicants).not.toEqual(sample.applicants.slice(0, 50))
  })
})
