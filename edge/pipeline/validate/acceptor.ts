import type { Feature, FeatureSpec } from '../../../shared/feature-spec.ts'
import { isRecord } from '../../format.ts'

/** Longest category value or entity id accepted; longer strings are refused, not truncated. */
export const MAX_STRING_LENGTH = 256

// eslint-disable-next-line no-control-regex
export const CONTROL = /[\u0000-\u001f\u007f]/

/** Whether a present value of the feature is acceptable (what its zod value schema accepts). */
const valueCheck = (f: Feature): ((value: unknown) => boolean) => {
  switch (f.type) {
    case 'number': {
      const { min, max } = f
      return (v) => typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max
    }
    case 'integer': {
      const { min, max } = f
      return (v) => Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max
    }
    case 'boolean':
      return (v) => typeof v === 'boolean'
    case 'category':
      return (v) => typeof v === 'string' && v.length > 0 && v.length <= MAX_STRING_LENGTH
  }
}

/** The feature inside an instance: required, optional, or absent unless the spec allows an override. */
const fieldCheck = (f: Feature): ((value: unknown) => boolean) => {
  if (f.source !== 'request' && !f.source.overridable) return (v) => v === undefined
  const check = valueCheck(f)
  const required = f.source === 'request' && f.required
  return required ? check : (v) => v === undefined || check(v)
}

const isEntityId = (v: unknown): boolean => v === undefined || (typeof v === 'string' && v.length > 0 && v.length <= MAX_STRING_LENGTH && !CONTROL.test(v))

/**
 * The verdict of the spec's zod schema (`compilePredictSchema`) on a predict body, as plain code:
 * true exactly when the schema accepts it. Zod stays the definition and explains every refusal;
 * this only lets the accepted requests (nearly all of them) skip it, which in workerd, where zod
 * cannot compile its parsers, is the largest part of validation. A property test holds the two to
 * the same verdict on valid and mutated bodies.
 */
export const compileAcceptor = (spec: FeatureSpec, maxInstances: number, entityKeys: readonly string[]): ((body: unknown) => boolean) => {
  const fields = new Map(spec.features.map((f) => [f.name, fieldCheck(f)]))
  const checks = [...fields.entries()]
  const entityKeySet = new Set(entityKeys)
  const acceptsInstance = (instance: unknown): boolean => {
    if (!isRecord(instance)) return false
    for (const key in instance) if (!fields.has(key)) return false
    for (const [name, check] of checks) if (!check(instance[name])) return false
    return true
  }
  const acceptsEntity = (entity: unknown): boolean => {
    if (!isRecord(entity)) return false
    for (const key in entity) if (!entityKeySet.has(key) || !isEntityId(entity[key])) return false
    return true
  }
  return (body) => {
    if (!isRecord(body)) return false
    for (const key in body) if (key !== 'instances' && key !== 'entity') return false
    const { instances, entity } = body
    if (!Array.isArray(instances) || instances.length < 1 || instances.length > maxInstances) return false
    for (const instance of instances) if (!acceptsInstance(instance)) return false
    return entity === undefined || acceptsEntity(entity)
  }
}
