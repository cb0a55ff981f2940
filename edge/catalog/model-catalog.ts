import { z } from 'zod'
import { featureSpec, type FeatureSpec } from '../../shared/feature-spec.ts'
import { Problem } from '../problem.ts'
import type { Transport } from '../forward/transport.ts'

const postprocess = z.object({
  output: z.string(),
  labels: z.array(z.string()).min(2),
  threshold: z.number().min(0).max(1).optional(),
})

/** What the edge knows of a model: served versions, the feature spec and how to read outputs. */
export interface ModelDescription {
  name: string
  versions: number[]
  spec: FeatureSpec
  postprocess: z.infer<typeof postprocess>
}

export interface ModelCatalogOptions {
  transport: Transport
  /** How long a description is trusted before it is fetched again. */
  ttlMs?: number
  now?: () => number
}

/**
 * The backend's model metadata, cached in the isolate: the feature spec has one source of
 * truth (the model's config.json, served by the backend) and the edge compiles from it.
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
    if (!spec.success || !post.success) {
      throw new Problem(501, 'Not Implemented', `model "${model}" has no feature spec or postprocess; call it through /v2/models/${model}/infer`, { slug: 'no-feature-spec' })
    }
    return {
      name: model,
      versions: (metadata.versions ?? []).map(Number).filter(Number.isInteger).sort((a, b) => a - b),
      spec: spec.data,
      postprocess: post.data,
    }
  }
}
