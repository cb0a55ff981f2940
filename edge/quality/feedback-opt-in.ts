import type { EdgeSettings } from '../bindings.ts'
import type { ModelDescription } from '../backend-client/catalog.ts'

/**
 * Whether the edge keeps a model's served predictions for feedback (and so whether labels for them
 * are to come): `FEEDBACK_MODELS` names it (or is `*`), and it has two labels, since quality is
 * binned over P(labels[1]).
 */
export const feedbackOn = ({ feedbackModels }: Pick<EdgeSettings, 'feedbackModels'>, model: Pick<ModelDescription, 'name' | 'postprocess'>): boolean =>
  model.postprocess?.labels.length === 2 && (feedbackModels === 'all' || feedbackModels.has(model.name))
