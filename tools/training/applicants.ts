import type { z } from 'zod'
import { featureSpec, type FeatureSpec } from '../../shared/feature-spec.ts'
import { createRandom, type Random } from './random.ts'

/**
 * Synthetic credit applicants for the demo model. The label comes from a logistic of a nonlinear
 * score plus a hidden "financial stress" factor that only leaks into some features, so a good
 * model ranks well (AUC in the 0.8s) without being able to be perfect.
 */

const REGIONS = ['north', 'south', 'east', 'west', 'central'] as const
const HOUSING = ['own', 'rent', 'mortgage', 'other'] as const
const LOAN_TERMS = [12, 24, 36, 48, 60, 72, 84] as const

export type Applicant = {
  age: number
  income: number
  debt_ratio: number
  credit_utilization: number
  credit_lines: number
  months_employed: number
  loan_amount: number
  loan_term_months: number
  num_late_payments: number
  region: (typeof REGIONS)[number]
  housing: (typeof HOUSING)[number]
  has_default_history: boolean
  account_age_months: number
  num_products: number
}

const user = { entity: 'user', key: 'user_id' }

/** Ranges are wider than the generator's so the spec, not the sample, sets what is valid. */
export const creditRiskSpecInput = {
  input: 'features',
  features: [
    { name: 'age', type: 'integer', min: 18, max: 100, description: 'Applicant age in years' },
    { name: 'income', type: 'number', min: 0, max: 5_000_000, important: true, description: 'Gross annual income' },
    { name: 'debt_ratio', type: 'number', min: 0, max: 5, important: true, description: 'Monthly debt payments over monthly income' },
    { name: 'credit_utilization', type: 'number', min: 0, max: 2, description: 'Revolving balance over revolving limit' },
    { name: 'credit_lines', type: 'integer', min: 0, max: 100, description: 'Open credit lines' },
    { name: 'months_employed', type: 'integer', min: 0, max: 1000, description: 'Months with the current employer' },
    { name: 'loan_amount', type: 'number', min: 100, max: 500_000, description: 'Requested principal' },
    { name: 'loan_term_months', type: 'integer', min: 6, max: 120, description: 'Requested term' },
    { name: 'num_late_payments', type: 'integer', min: 0, max: 60, description: 'Payments 30+ days late in the last 2 years' },
    { name: 'region', type: 'category', categories: [...REGIONS], description: 'Sales region' },
    { name: 'housing', type: 'category', categories: [...HOUSING], description: 'Housing status' },
    { name: 'has_default_history', type: 'boolean', description: 'Any default on record' },
    { name: 'account_age_months', type: 'integer', min: 0, max: 600, source: user, default: 0, description: 'Months since the customer account was opened' },
    { name: 'num_products', type: 'integer', min: 0, max: 20, source: user, default: 1, description: 'Products the customer holds with us' },
  ],
} satisfies z.input<typeof featureSpec>

export const creditRiskSpec: FeatureSpec = featureSpec.parse(creditRiskSpecInput)

export interface ApplicantSample {
  applicants: Applicant[]
  /** 1 = high risk. */
  labels: Uint8Array
  /** The probability each label was drawn with: what a perfect model would predict. */
  risk: Float64Array
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x))
const clamp = (x: number, min: number, max: number): number => Math.min(max, Math.max(min, x))
const roundTo = (x: number, step: number): number => Math.round(x / step) * step
const round3 = (x: number): number => Math.round(x * 1000) / 1000

const REGION_WEIGHTS = [0.28, 0.24, 0.2, 0.2, 0.08]
const REGION_RISK: Readonly<Record<Applicant['region'], number>> = { north: -0.15, south: 0.25, east: 0, west: -0.1, central: 0.4 }
const HOUSING_RISK: Readonly<Record<Applicant['housing'], number>> = { own: -0.55, rent: 0.3, mortgage: -0.15, other: 0.5 }

/** 18 + Gamma(2, 10): few at 18, a mode near 28, a long tail; redrawn rather than piled up at 100. */
const drawAge = (random: Random): number => {
  for (;;) {
    const age = 18 + Math.round(-10 * (Math.log(1 - random.next()) + Math.log(1 - random.next())))
    if (age <= 100) return age
  }
}

const drawApplicant = (random: Random): { applicant: Applicant; stress: number } => {
  // Hidden factor: drives late payments, utilization and the label, but is never observed itself.
  const stress = random.normal()
  const age = drawAge(random)
  // Earnings rise into the fifties and fall after; log-normal spread around that.
  const ageCurve = -0.0009 * (age - 50) ** 2
  const income = clamp(roundTo(Math.exp(random.normal(Math.log(58_000) + ageCurve - 0.08 * stress, 0.55)), 100), 5_000, 2_000_000)
  const employed = random.bernoulli(0.93)
  const months_employed = employed ? Math.round(clamp((age - 18) * 12, 1, 600) * random.next() ** 1.6) : 0
  const debt_ratio = round3(clamp(Math.exp(random.normal(Math.log(0.28) + 0.15 * stress, 0.5)), 0, 3))
  const credit_utilization = round3(clamp(1.1 * sigmoid(random.normal(-0.6 + 0.7 * stress, 1.1)), 0, 1.5))
  const credit_lines = Math.min(60, random.poisson(1.5 + (age - 18) / 9))
  const loan_amount = clamp(roundTo(Math.exp(random.normal(Math.log(income * 0.22), 0.75)), 50), 500, 250_000)
  const bigLoan = loan_amount > 20_000 ? 1 : 0
  const loan_term_months = random.choice(LOAN_TERMS, [3 - 2 * bigLoan, 5 - 2 * bigLoan, 6, 4, 3 + bigLoan, 1 + 2 * bigLoan, 1 + 2 * bigLoan])
  const num_late_payments = Math.min(40, random.poisson(0.35 * Math.exp(0.9 * stress)))
  const region = random.choice(REGIONS, REGION_WEIGHTS)
  const young = age < 30 ? 1 : 0
  const housing = random.choice(HOUSING, [0.35 - 0.25 * young, 0.3 + 0.35 * young, 0.33 - 0.1 * young, 0.02])
  const has_default_history = random.bernoulli(sigmoid(-3.2 + 1.1 * stress))
  const account_age_months = random.int(0, clamp((age - 18) * 12, 0, 360))
  const num_products = Math.min(12, 1 + random.poisson(0.4 + account_age_months / 120))
  return {
    stress,
    applicant: {
      age, income, debt_ratio, credit_utilization, credit_lines, months_employed, loan_amount, loan_term_months,
      num_late_payments, region, housing, has_default_history, account_age_months, num_products,
    },
  }
}

/** Log-odds of high risk: thresholds, a U-shape in age and interactions a linear model misses. */
const riskScore = (a: Applicant, stress: number): number => {
  const monthlyPayment = a.loan_amount / a.loan_term_months
  const burden = (12 * monthlyPayment) / a.income
  return (
    -2.6 +
    4.5 * Math.max(0, a.debt_ratio - 0.4) +
    2.9 * Math.max(0, a.credit_utilization - 0.7) +
    1.45 * Math.log1p(a.num_late_payments) * (1 + a.credit_utilization) +
    1.75 * (a.has_default_history ? 1 : 0) +
    4 * Math.min(burden, 1.5) -
    0.7 * Math.log(a.income / 58_000) +
    0.002 * (a.age - 45) ** 2 -
    Math.min(a.months_employed, 60) / 60 +
    1.3 * Math.exp(-a.account_age_months / 12) -
    0.13 * Math.min(a.num_products, 5) +
    REGION_RISK[a.region] +
    HOUSING_RISK[a.housing] +
    0.65 * stress
  )
}

/** Draws `count` applicants and their labels; the same seed always gives the same sample. */
export const generateApplicants = (count: number, seed: number): ApplicantSample => {
  const random = createRandom(seed)
  const applicants: Applicant[] = []
  const labels = new Uint8Array(count)
  const risk = new Float64Array(count)
  for (let i = 0; i < count; i++) {
    const { applicant, stress } = drawApplicant(random)
    applicants.push(applicant)
    risk[i] = sigmoid(riskScore(applicant, stress))
    labels[i] = random.bernoulli(risk[i]) ? 1 : 0
  }
  return { applicants, labels, risk }
}
