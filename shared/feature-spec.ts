import * as z from 'zod'

/**
 * The feature spec: the one description of a model's inputs that both tiers read. The backend
 * serves it in model metadata; the edge compiles it into request validation; the monitor uses it
 * to map tensor columns back to features.
 *
 * Tensor layout: features occupy consecutive columns of one FP32 input tensor in spec order.
 * number/integer/boolean take one column (boolean as 0/1); a category takes
 * `categories.length + 1` columns, a one-hot with the last column for `__unseen__`.
 */
export const UNSEEN_CATEGORY = '__unseen__'

const entitySource = z.strictObject({
  entity: z.string().min(1),
  key: z.string().min(1),
  /** Whether a value sent in the request may override the stored one. */
  overridable: z.boolean().default(false),
})

const base = {
  name: z.string().regex(/^[a-z][a-z0-9_]*$/, 'feature names are snake_case'),
  description: z.string().optional(),
  required: z.boolean().default(true),
  source: z.union([z.literal('request'), entitySource]).default('request'),
  /** Drift on an important feature makes the whole dataset verdict critical. */
  important: z.boolean().default(false),
}

export const numericFeature = z.strictObject({
  ...base,
  type: z.enum(['number', 'integer']),
  min: z.number(),
  max: z.number(),
  default: z.number().optional(),
})

export const booleanFeature = z.strictObject({
  ...base,
  type: z.literal('boolean'),
  default: z.boolean().optional(),
})

export const categoryFeature = z.strictObject({
  ...base,
  type: z.literal('category'),
  categories: z.array(z.string().min(1)).min(1),
  default: z.string().optional(),
})

export const feature = z.discriminatedUnion('type', [numericFeature, booleanFeature, categoryFeature])

export const featureSpec = z
  .strictObject({
    /** Name of the FP32 input tensor the features are packed into. */
    input: z.string().min(1),
    features: z.array(feature).min(1),
  })
  .superRefine((spec, ctx) => {
    const seen = new Set<string>()
    spec.features.forEach((f, i) => {
      if (seen.has(f.name)) ctx.addIssue({ code: 'custom', path: ['features', i, 'name'], message: `duplicate feature "${f.name}"` })
      seen.add(f.name)
      if (f.type !== 'boolean' && f.type !== 'category' && f.min > f.max) {
        ctx.addIssue({ code: 'custom', path: ['features', i, 'min'], message: 'min is greater than max' })
      }
      if (!f.required && f.default === undefined) {
        ctx.addIssue({ code: 'custom', path: ['features', i, 'default'], message: 'an optional feature needs a default' })
      }
    })
  })

export type Feature = z.infer<typeof feature>
export type FeatureSpec = z.infer<typeof featureSpec>
export type FeatureValue = number | boolean | string

/** Number of tensor columns a feature occupies. */
export const featureWidth = (f: Feature): number => (f.type === 'category' ? f.categories.length + 1 : 1)

/** Total tensor width of a spec. */
export const specWidth = (spec: FeatureSpec): number => spec.features.reduce((n, f) => n + featureWidth(f), 0)

/** Column offset of each feature, in spec order. */
export const featureOffsets = (spec: FeatureSpec): number[] => {
  let offset = 0
  return spec.features.map((f) => {
    const at = offset
    offset += featureWidth(f)
    return at
  })
}

/** Writes one instance (already validated) into `row` starting at column 0. */
export const encodeInstance = (spec: FeatureSpec, instance: Readonly<Record<string, FeatureValue>>, row: Float32Array): void => {
  let col = 0
  for (const f of spec.features) {
    const value = instance[f.name] ?? f.default
    if (f.type === 'category') {
      row.fill(0, col, col + f.categories.length + 1)
      const at = f.categories.indexOf(String(value))
      row[col + (at === -1 ? f.categories.length : at)] = 1
      col += f.categories.length + 1
    } else {
      row[col++] = f.type === 'boolean' ? (value ? 1 : 0) : Number(value)
    }
  }
}
