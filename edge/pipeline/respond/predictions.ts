import type { InferResponse } from '../../../shared/protocol.ts'
import { Problem } from '../../problem.ts'
import type { PredictableModel } from '../../backend-client/catalog.ts'

export interface Prediction {
  label: string
  probability: number
  scores: Record<string, number>
}

/** A model answered NaN or ±Infinity: never passed on, and a reason to retry a canary's call on stable. */
export class NonFiniteOutput extends Problem {
  constructor() {
    super(502, 'Bad Gateway', 'the model returned a non-finite or misshapen output; the request was not answered with it', { slug: 'bad-model-output' })
  }
}

/** Turns one row of class probabilities into the label the model's postprocess names. */
export const toPrediction = (probabilities: readonly number[], post: PredictableModel['postprocess']): Prediction => {
  if (probabilities.length !== post.labels.length || !probabilities.every(Number.isFinite)) throw new NonFiniteOutput()
  let best = 0
  if (post.labels.length === 2 && post.threshold !== undefined) best = probabilities[1] >= post.threshold ? 1 : 0
  else for (let i = 1; i < probabilities.length; i++) if (probabilities[i] > probabilities[best]) best = i
  return {
    label: post.labels[best],
    probability: probabilities[best],
    scores: Object.fromEntries(post.labels.map((label, i) => [label, probabilities[i]])),
  }
}

/** The model's answer as one prediction per row, refusing misshapen or non-finite outputs. */
export const predictionsOf = (response: InferResponse, model: PredictableModel, rows: number): Prediction[] => {
  const output = response.outputs.find((o) => o.name === model.postprocess.output)
  const classes = model.postprocess.labels.length
  if (!output || output.data.length !== rows * classes) {
    throw new Problem(502, 'Bad Gateway', `the inference tier answered without ${rows} rows of "${model.postprocess.output}"`, { slug: 'bad-model-output' })
  }
  const predictions: Prediction[] = []
  for (let r = 0; r < rows; r++) predictions.push(toPrediction(output.data.slice(r * classes, (r + 1) * classes) as number[], model.postprocess))
  return predictions
}
