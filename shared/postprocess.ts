import * as z from 'zod'

/**
 * How a classifier's output becomes predictions: declared in the model's config.json, served by
 * the backend in model metadata, and read by the edge to answer predict. One schema for both.
 */
export const postprocess = z.strictObject({
  /** Output tensor holding class probabilities, shape [batch, labels.length]. */
  output: z.string().min(1),
  labels: z.array(z.string().min(1)).min(2),
  /** For binary models: probability of labels[1] at or above which labels[1] is predicted. */
  threshold: z.number().min(0).max(1).optional(),
})

export type Postprocess = z.infer<typeof postprocess>
