import type { Feature, FeatureValue } from '../../../shared/feature-spec.ts'

const DECIMAL = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/
const INTEGER = /^-?\d+$/

/** Longest stored category accepted (as for request values). */
const MAX_CATEGORY_LENGTH = 256

/**
 * Converts one stored hash value to the feature's type, strictly, or `undefined` when it does not
 * fit the spec (then it is not used: the feature falls back to its default and the read counts as
 * degraded). number: an exact decimal within [min, max]; integer: digits only, safe, within
 * [min, max]; boolean: "true" / "false" / "1" / "0"; category: any non-empty string, as is (one
 * outside `categories` is encoded as `__unseen__`, like a request value).
 */
export const convertStored = (f: Feature, raw: string): FeatureValue | undefined => {
  switch (f.type) {
    case 'number': {
      if (!DECIMAL.test(raw)) return undefined
      const n = Number(raw)
      return Number.isFinite(n) && n >= f.min && n <= f.max ? n : undefined
    }
    case 'integer': {
      if (!INTEGER.test(raw)) return undefined
      const n = Number(raw)
      return Number.isSafeInteger(n) && n >= f.min && n <= f.max ? n : undefined
    }
    case 'boolean':
      return raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : undefined
    case 'category':
      return raw.length > 0 && raw.length <= MAX_CATEGORY_LENGTH ? raw : undefined
  }
}
