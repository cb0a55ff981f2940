import type { EdgeSettings } from '../bindings.ts'
import type { ModelDescription } from '../backend-client/catalog.ts'

/** How the edge keeps a model's served predictions for feedback. */
export interface FeedbackTerms {
  /** Seconds a served record waits for its labels. */
  ttlSeconds: number
  /** The labels feedback may post, one per postprocess label in its order: `labels[1]` is the positive class. */
  labels: string[]
}

type Settings = Pick<EdgeSettings, 'feedbackModels' | 'feedbackTtlSeconds'>
type Model = Pick<ModelDescription, 'name' | 'postprocess' | 'feedback'>

/**
 * Whether, and how, the edge keeps a model's served predictions for feedback (and so whether labels
 * for them are to come). A two-label model only, since quality is binned over P(labels[1]); then
 * its config.json's `feedback` block opts it in, and `FEEDBACK_MODELS` (a name, or `*`) opts it in
 * whatever its config says: an override for models whose config has no block. TTL and labels come
 * from the block, else `FEEDBACK_TTL_SECONDS` and the postprocess labels.
 */
export const feedbackTerms = ({ feedbackModels, feedbackTtlSeconds }: Settings, model: Model): FeedbackTerms | undefined => {
  const labels = model.postprocess?.labels
  if (labels?.length !== 2) return undefined
  const own = model.feedback
  if (own === undefined && feedbackModels !== 'all' && !feedbackModels.has(model.name)) return undefined
  // The backend holds a block's labels to the postprocess's count; an edge never assumes it did.
  return { ttlSeconds: own?.ttl_seconds ?? feedbackTtlSeconds, labels: own?.labels?.length === 2 ? own.labels : labels }
}

/** Whether the edge keeps a model's served predictions for feedback: see `feedbackTerms`. */
export const feedbackOn = (settings: Settings, model: Model): boolean => feedbackTerms(settings, model) !== undefined
