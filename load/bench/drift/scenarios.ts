import type { Applicant } from '../../../tools/training/applicants.ts'

/**
 * What happens to live traffic in each scenario of `bench:drift`: a change to the applicants
 * before they are encoded, to the encoded rows (missing values, unseen categories exist only as
 * tensor columns), or to the model's output probabilities.
 */
export interface Scenario {
  name: string
  /** The feature (or `prediction`) whose alert is timed. */
  watch: string
  /** Whether meeting the design's targets is required of this row, or it is only reported. */
  required: boolean
  applicant?: (a: Applicant, draw: () => number) => Applicant
  /** Edits one encoded row in place; `column` is the watched feature's first tensor column. */
  row?: (row: Float32Array, column: number, draw: () => number) => void
  probability?: (p: number) => number
}

export interface Moments {
  mean: number
  sd: number
}

const logit = (p: number) => Math.log(p / (1 - p))
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x))

/** Mean and spread of the watched numeric features in the reference sample, for σ-sized shifts. */
export const scenarios = ({ debt_ratio: debt, credit_utilization: utilization, age }: Record<'debt_ratio' | 'credit_utilization' | 'age', Moments>): Scenario[] => [
  { name: 'no drift', watch: '*', required: true },
  { name: 'mean shift 0.25σ (debt_ratio)', watch: 'debt_ratio', required: true, applicant: (a) => ({ ...a, debt_ratio: a.debt_ratio + 0.25 * debt.sd }) },
  { name: 'mean shift 0.5σ (debt_ratio)', watch: 'debt_ratio', required: true, applicant: (a) => ({ ...a, debt_ratio: a.debt_ratio + 0.5 * debt.sd }) },
  {
    name: 'scale 1.5× (credit_utilization)', watch: 'credit_utilization', required: true,
    applicant: (a) => ({ ...a, credit_utilization: utilization.mean + 1.5 * (a.credit_utilization - utilization.mean) }),
  },
  // The mean stays put: only the shape gate (Wasserstein-1) can tell.
  {
    name: 'scale 1.25× (credit_utilization)', watch: 'credit_utilization', required: true,
    applicant: (a) => ({ ...a, credit_utilization: utilization.mean + 1.25 * (a.credit_utilization - utilization.mean) }),
  },
  {
    // Two modes 1.6 sd apart, each 0.6 times as wide: the same mean and sd as before.
    name: 'bimodal split (age)', watch: 'age', required: true,
    applicant: (a, draw) => ({ ...a, age: age.mean + (draw() < 0.5 ? -0.8 : 0.8) * age.sd + 0.6 * (a.age - age.mean) }),
  },
  {
    // Known categories only, about 6% of all rows moved (TVD ≈ 0.06): PSI stays near 0.05.
    name: 'category shift 22% of north → central (region)', watch: 'region', required: true,
    applicant: (a, draw) => (a.region === 'north' && draw() < 0.22 ? { ...a, region: 'central' } : a),
  },
  {
    // The tensor's __unseen__ column: what the edge encodes for a category the spec does not list.
    name: 'new category 10% (region)', watch: 'region', required: true,
    row: (row, column, draw) => {
      if (draw() >= 0.1) return
      row.fill(0, column, column + 6)
      row[column + 5] = 1
    },
  },
  {
    name: 'missing +10 points (credit_utilization)', watch: 'credit_utilization', required: true,
    row: (row, column, draw) => {
      if (draw() < 0.1) row[column] = Number.NaN
    },
  },
  // A model that scores everyone riskier: the inputs stay put, only the outputs move.
  ...[0.5, 1].map((logits): Scenario => ({
    name: `prediction shift (+${logits} logit)`, watch: 'prediction', required: true,
    probability: (p) => sigmoid(logit(Math.min(1 - 1e-7, Math.max(1e-7, p))) + logits),
  })),
]
