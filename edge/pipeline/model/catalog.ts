import { featureSpec, type FeatureSpec } from '../../../shared/feature-spec.ts'
import { postprocess, type Postprocess } from '../../../shared/postprocess.ts'
import { Problem } from '../../problem.ts'
import type { Transport } from '../forward/transport.ts'

/**
 * What the edge knows of a model: served versions, and for a model clients may call through
 * predict, the feature spec and how to read outputs. Tensor-only models have neither.
 */
export interface ModelDescription {
  name: string
  versions: number[]
  spec?: FeatureSpec
  postprocess?: Postprocess
}

/** A model the predict path can serve: it has both a feature spec and a postprocess. */
export type PredictableModel = Required<ModelDescription>

/**
 * The model as the predict path needs it, or a refusal naming the route it can be called through.
 * 404, not 422: the body is not at fault; this model has no predict operation whatever the body says.
 */
const hasPredict = (model: ModelDescription): model is PredictableModel => model.spec !== undefined && model.postprocess !== undefined

export const predictable = (model: ModelDescription): PredictableModel => {
  if (hasPredict(model)) return model
  throw new Problem(404, 'Not Found', `model "${model.name}" has no feature spec or postprocess, so no predict; call it through /v2/models/${model.name}/infer`, { slug: 'no-feature-spec' })
}

export interface ModelCatalogOptions {
  transport: Transport
  /** How long a description is trusted before it is fetched again. */
  ttlMs?: number
  now?: () => number
}

/**
 * The backend's model metadata, cached in the isolate, for every model it serves: the feature
 * spec has one source of truth (the model's config.json, served by the backend) and the edge
 * compiles from it.
 */
export class ModelCatalog {
  private readonly cache = new Map<string, { at: number; value: Promise<ModelDescription> }>()
  private readonly transport: Transport
  private readonly ttlMs: number
  private readonly now: () => number

  constructor({ transport, ttlMs = 60_000, now = Date.now }: ModelCatalogOptions) {
    this.transport = transport
    this.ttlMs = ttlMs
    this.now = now
  }

  /** `fresh` fetches now (and caches that): for a writer that must check what the backend serves at this moment. */
  describe(model: string, requestId: string, { fresh = false }: { fresh?: boolean } = {}): Promise<ModelDescription> {
    const cached = this.cache.get(model)
    if (!fresh && cached && this.now() - cached.at < this.ttlMs) return cached.value
    const value = this.fetch(model, requestId)
    this.cache.set(model, { at: this.now(), value })
    // A failed fetch must not be cached: the next request asks again.
    value.catch(() => this.cache.get(model)?.value === value && this.cache.delete(model))
    return value
  }

  private async fetch(model: string, requestId: string): Promise<ModelDescription> {
    const metadata = await this.transport.metadata(model, requestId)
    const spec = featureSpec.safeParse(metadata.features)
    const post = postprocess.safeParse(metadata.postprocess)
    // One that is there but does not parse leaves the model tensor-only: say so where operators look.
    if ((metadata.features !== undefined && !spec.success) || (metadata.postprocess !== undefined && !post.success)) {
      console.error(JSON.stringify({ level: 'warn', msg: 'model metadata has a feature spec or postprocess the edge cannot read; predict is refused for it', model }))
    }
    return {
      name: model,
      versions: (metadata.versions ?? []).map(Number).filter(Number.isInteger).sort((a, b) => a - b),
      ...(spec.success ? { spec: spec.data } : {}),
      ...(post.success ? { postprocess: post.data } : {}),
    }
  }
}
