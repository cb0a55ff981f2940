import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { encodeInstance, featureSpec, specWidth, type FeatureValue } from '../../../shared/feature-spec.ts'
import { DEMO_REPOSITORY } from './fixture-repository.ts'

const config = JSON.parse(readFileSync(join(DEMO_REPOSITORY, 'credit-risk', 'config.json'), 'utf8')) as { features: unknown }
export const CREDIT_SPEC = featureSpec.parse(config.features)
export const CREDIT_WIDTH = specWidth(CREDIT_SPEC)

/** A plausible applicant, varied by `i` so rows differ. */
export const applicant = (i = 0): Record<string, FeatureValue> => ({
  age: 25 + (i % 40),
  income: 30_000 + 1_500 * (i % 50),
  debt_ratio: 0.1 + 0.05 * (i % 12),
  credit_utilization: 0.2 + 0.03 * (i % 20),
  credit_lines: 2 + (i % 8),
  months_employed: 12 * (1 + (i % 15)),
  loan_amount: 5_000 + 500 * (i % 30),
  loan_term_months: 36,
  num_late_payments: i % 4,
  region: ['north', 'south', 'east', 'west', 'central'][i % 5],
  housing: ['own', 'rent', 'mortgage', 'other'][i % 4],
  has_default_history: i % 7 === 0,
  account_age_months: 6 * (i % 40),
  num_products: 1 + (i % 5),
})

/** Feature rows of the demo model, as nested arrays. */
export const applicantRows = (count: number, from = 0): number[][] =>
  Array.from({ length: count }, (_, k) => {
    const row = new Float32Array(CREDIT_WIDTH)
    encodeInstance(CREDIT_SPEC, applicant(from + k), row)
    return Array.from(row)
  })

/** An Open Inference Protocol request for the demo model. */
export const creditRequest = (count = 1, from = 0, extra: Record<string, unknown> = {}) => ({
  ...extra,
  inputs: [{ name: 'features', shape: [count, CREDIT_WIDTH], datatype: 'FP32', data: applicantRows(count, from) }],
})
