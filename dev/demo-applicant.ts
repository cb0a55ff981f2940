import type { FeatureValue } from '../shared/feature-spec.ts'

/**
 * A plausible credit-risk applicant varied by `i`, as a client sends it: the request features
 * only (the user entity's features come from the feature store). Demo data for tests and benchmarks.
 */
export const demoApplicant = (i = 0): Record<string, FeatureValue> => ({
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
})
