import * as z from 'zod'

/**
 * A model's feedback opt-in, declared in its config.json, served by the backend in model metadata
 * and read by the edge: while it is there, the edge keeps what it served the model for labels to
 * find. One schema for both tiers.
 */
export const feedbackConfig = z.strictObject({
  /** Seconds a served prediction waits for its label; absent: the edge's FEEDBACK_TTL_SECONDS. */
  ttl_seconds: z.number().int().positive().optional(),
  /**
   * The ground-truth labels feedback may post, one per postprocess label in its order (so
   * `labels[1]` is the positive class); absent: the postprocess labels themselves.
   */
  labels: z
    .array(z.string().min(1))
    .min(1)
    .refine((labels) => new Set(labels).size === labels.length, 'labels must be distinct')
    .optional(),
})

export type FeedbackConfig = z.infer<typeof feedbackConfig>
