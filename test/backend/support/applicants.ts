import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { encodeInstance, featureSpec, specWidth, type FeatureValue } from '../../../shared/feature-spec.ts'
import { demoApplicant } from '../../../dev/demo-applicant.ts'
import { DEMO_REPOSITORY } from './fixture-repository.ts'

const config = JSON.parse(readFileSync(join(DEMO_REPOSITORY, 'credit-risk', 'config.json'), 'utf8')) as { features: unknown }
export const CREDIT_SPEC = featureSpec.parse(config.features)
export const CREDIT_WIDTH = specWidth(CREDIT_SPEC)

/** A plausible applicant, varied by `i` so rows differ, with the user entity's features too. */
export const applicant = (i = 0): Record<string, FeatureValue> => ({
  ...demoApplicant(i),
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
