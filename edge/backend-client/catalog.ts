import { featureSpec, type FeatureSpec } from '../../shared/feature-spec.ts'
import { postprocess, type Postprocess } from '../../shared/postprocess.ts'
import { feedbackConfig, type FeedbackConfig } from '../../shared/feedback-config.ts'
import { Problem } from '../problem.ts'
import { REPOSITORY_TIMEOUT_MS, deadlinePassed } from './http.ts'
import type { Transport } from './transport.ts'

/**
 * What the edge knows of a model: served versions, and for a model clients may call through
 * predict, the feature spec and how to read outputs. Tensor-only models have neither.
 */
export interface ModelDescription {
  name: string
  versions: number[]
  spec?: FeatureSpec
  postprocess?: Postprocess
  /** The model's own feedback opt-in (its config.json), when it has one. */
  feedback?: FeedbackConfig
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
  /** The longest the transport lets a fetch run, whatever the caller's deadline. */
  fetchBoundMs?: number
  now?: () => number
}

export interface DescribeOptions {
  /**
   * When the caller stops waiting (epoch ms): a fetch it starts is given what remains, and its
   * wait on a fetch another request started ends then too (504).
   */
  deadlineAt?: number
  /** Only a description fetched at or after this time will do (epoch ms): e.g. after the backend refused a version the cached one lists. */
  since?: number
  /** Fetch now (and cache that): for a writer that must check what the backend serves at this moment. */
  fresh?: boolean
}

interface Entry {
  /** When the fetch started. */
  at: number
  /** When the fetch gives up: its starter's deadline, or the transport's bound. */
  until: number
  settled: boolean
  value: Promise<ModelDescription>
}

/** `value`, or a 504 when `deadlineAt` comes first (the value's own failure stays its own). */
const within = <T>(value: Promise<T>, deadlineAt: number, now: number): Promise<T> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(deadlinePassed('inference tier')), Math.max(0, deadlineAt - now))
  })
  return Promise.race([value, expired]).finally(() => clearTimeout(timer))
}

/**
 * The backend's model metadata, cached in the isolate, for every model it serves: the feature
 * spec has one source of truth (the model's config.json, served by the backend) and the edge
 * compiles from it. Concurrent requests share one fetch, unless it would give up before a
 * request's own deadline (it was started for a request with less time): such a request starts
 * its own, so that no request fails on another's budget.
 */
export class ModelCatalog {
  private readonly cache = new Map<string, Entry>()
  private readonly transport: Transport
  private readonly ttlMs: number
  private readonly fetchBoundMs: number
  private readonly now: () => number

  constructor({ transport, ttlMs = 60_000, fetchBoundMs = REPOSITORY_TIMEOUT_MS, now = Date.now }: ModelCatalogOptions) {
    this.transport = transport
    this.ttlMs = ttlMs
    this.fetchBoundMs = fetchBoundMs
    this.now = now
  }

  describe(model: string, requestId: string, { deadlineAt, since, fresh = false }: DescribeOptions = {}): Promise<ModelDescription> {
    const now = this.now()
    const until = Math.min(deadlineAt ?? Infinity, now + this.fetchBoundMs)
    let entry = this.cache.get(model)
    const usable =
      entry !== undefined &&
      now - entry.at < this.ttlMs &&
      entry.at >= (fresh ? now : (since ?? -Infinity)) &&
      // An answer, or a fetch that waits as long as this caller could (or as long as any fetch may).
      (entry.settled || entry.until >= Math.min(until, entry.at + this.fetchBoundMs))
    if (!usable) entry = this.start(model, requestId, now, until, deadlineAt)
    return entry!.settled || deadlineAt === undefined ? entry!.value : within(entry!.value, deadlineAt, now)
  }

  private start(model: string, requestId: string, at: number, until: number, deadlineAt: number | undefined): Entry {
    const entry: Entry = { at, until, settled: false, value: this.fetch(model, requestId, deadlineAt) }
    this.cache.set(model, entry)
    entry.value.then(
      () => (entry.settled = true),
      // A failed fetch must not be cached: the next request asks again.
      () => this.cache.get(model) === entry && this.cache.delete(model),
    )
    return entry
  }

  private async fetch(model: string, requestId: string, deadlineAt: number | undefined): Promise<ModelDescription> {
    const metadata = await this.transport.metadata(model, requestId, deadlineAt)
    const spec = featureSpec.safeParse(metadata.features)
    const post = postprocess.safeParse(metadata.postprocess)
    // One that is there but does not parse leaves the model tensor-only: say so where operators look.
    if ((metadata.features !== undefined && !spec.success) || (metadata.postprocess !== undefined && !post.success)) {
      console.error(JSON.stringify({ level: 'warn', msg: 'model metadata has a feature spec or postprocess the edge cannot read; predict is refused for it', model }))
    }
    const feedback = feedbackConfig.safeParse(metadata.feedback)
    // The backend validated it; one this edge cannot read leaves feedback to FEEDBACK_MODELS.
    if (metadata.feedback !== undefined && !feedback.success) {
      console.error(JSON.stringify({ level: 'warn', msg: 'model metadata has a feedback block the edge cannot read; feedback for it follows FEEDBACK_MODELS only', model }))
    }
    return {
      name: model,
      versions: (metadata.versions ?? []).map(Number).filter(Number.isInteger).sort((a, b) => a - b),
      ...(spec.success ? { spec: spec.data } : {}),
      ...(post.success ? { postprocess: post.data } : {}),
      ...(metadata.feedback !== undefined && feedback.success ? { feedback: feedback.data } : {}),
    }
  }
}
