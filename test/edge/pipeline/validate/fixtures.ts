import { readFileSync } from 'node:fs'
import { type FeatureSpec, type FeatureValue, featureSpec } from '../../../../shared/feature-spec.ts'

/** The real credit-risk spec, as the backend serves it. */
export const creditRisk: FeatureSpec = featureSpec.parse(JSON.parse(readFileSync('models/credit-risk/config.json', 'utf8')).features)

/** The same spec, with entity features a request may override. */
export const creditRiskOverridable: FeatureSpec = featureSpec.parse({
  ...creditRisk,
  features: creditRisk.features.map((f) => (f.source === 'request' ? f : { ...f, source: { ...f.source, overridable: true } })),
})

/** A valid request-sourced instance of credit-risk. */
export const applicant = (): Record<string, FeatureValue> => ({
  age: 41,
  income: 72_000,
  debt_ratio: 0.35,
  credit_utilization: 0.4,
  credit_lines: 5,
  months_employed: 60,
  loan_amount: 15_000,
  loan_term_months: 36,
  num_late_payments: 0,
  region: 'north',
  housing: 'rent',
  has_default_history: false,
})

/** mulberry32: seeded, so property checks are reproducible. */
export const random = (seed: number) => {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1))
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]
  return { next, int, pick }
}

/** A random valid instance of any spec: values in range, known or unseen categories, optional features sometimes left out. */
export const randomInstance = (spec: FeatureSpec, rng: ReturnType<typeof random>): Record<string, FeatureValue> => {
  const out: Record<string, FeatureValue> = {}
  for (const f of spec.features) {
    if (f.source !== 'request' && !f.source.overridable) continue
    if ((f.source !== 'request' || !f.required) && rng.next() < 0.3) continue
    if (f.type === 'integer') out[f.name] = rng.int(Math.ceil(f.min), Math.floor(f.max))
    else if (f.type === 'number') out[f.name] = rng.pick([f.min, f.max, f.min + (f.max - f.min) * rng.next()])
    else if (f.type === 'boolean') out[f.name] = rng.next() < 0.5
    else if (f.type === 'category') out[f.name] = rng.next() < 0.8 ? rng.pick(f.categories) : rng.pick(['atlantis', 'Nörth', '__unseen__', 'x'.repeat(256), 'ab+c/d=='])
  }
  return out
}
