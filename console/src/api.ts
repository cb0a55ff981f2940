import type { z } from 'zod'
import type { DriftReport } from '../../backend/monitor/drift/report.ts'
import type { BackendStatsAnswer as BackendStats } from '../../edge/console/backend-stats-shape.ts'
import type { historyEntry, modelDescription, rolloutState } from '../../edge/openapi/schemas.ts'
import type { ShadowPair } from '../../edge/stores/tallies/shadow.ts'
import type { controllerSettings } from '../../edge/routes/controller.ts'
import type { VersionQuality } from '../../edge/quality/model-quality.ts'
import type { RolloutPut } from './plan.ts'

// The shapes the edge documents in its OpenAPI schemas (the drift report is the backend's, passed through).
export type { BackendStats, DriftReport, ShadowPair, VersionQuality }
export type HistoryEntry = z.infer<typeof historyEntry>
/** `GET /v1/rollout/controller`: the ladder and the rules of a step. */
export type ControllerSettings = z.infer<typeof controllerSettings>
export type ModelDescription = z.infer<typeof modelDescription>
/** `GET /v1/models/{m}/rollout`, with the ETag a PUT must send back. */
export type RolloutState = z.infer<typeof rolloutState> & { etag: string }
export type Rollout = RolloutState['rollout']

/** A refusal of the edge, with the problem's title and detail when it sent one. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly title: string, readonly detail: string) {
    super(`${status} ${title}: ${detail}`)
    this.name = 'ApiError'
  }

  /** What the operator should read: a refused key says what to do about it. */
  get explanation(): string {
    if (this.status === 401) return `The edge refused this key (401 ${this.title}): ${this.detail}. Paste the whole admin key.`
    if (this.status === 403) return `This key may not use the admin API (403 ${this.title}): ${this.detail}. The console needs a key with the "admin" scope.`
    return this.message
  }
}

const problemOf = async (res: Response): Promise<ApiError> => {
  const body: unknown = await res.json().catch(() => undefined)
  const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {}
  const text = (value: unknown, fallback: string) => (typeof value === 'string' && value ? value : fallback)
  return new ApiError(res.status, text(fields.title, res.statusText || 'error'), text(fields.detail, 'no detail given'))
}

/**
 * The admin API of the edge that served this page, called with the key in a header only: never
 * in a URL, a cookie or storage. Same origin, so no CORS and no other host ever sees the key.
 */
export const createApi = (key: string) => {
  const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
    let res: Response
    try {
      res = await fetch(path, { ...init, cache: 'no-store', credentials: 'omit', headers: { 'x-api-key': key, ...init.headers } })
    } catch (err) {
      throw new ApiError(0, 'No answer', `the edge did not answer: ${err instanceof Error ? err.message : String(err)}`)
    }
    if (!res.ok) throw await problemOf(res)
    return res
  }
  const json = async <T>(path: string): Promise<T> => (await (await call(path)).json()) as T
  const model = (name: string) => `/v1/models/${encodeURIComponent(name)}`
  return {
    models: async () => (await json<{ models: Array<{ name: string }> }>('/v1/models')).models.map((m) => m.name),
    describe: (name: string) => json<ModelDescription>(model(name)),
    rollout: async (name: string): Promise<RolloutState> => {
      const res = await call(`${model(name)}/rollout`)
      return { ...((await res.json()) as z.infer<typeof rolloutState>), etag: res.headers.get('etag') ?? '' }
    },
    history: async (name: string, limit = 100) => (await json<{ entries: HistoryEntry[] }>(`${model(name)}/rollout/history?limit=${limit}`)).entries,
    drift: (name: string, version: number, window: string) => json<DriftReport>(`${model(name)}/versions/${version}/drift?window=${encodeURIComponent(window)}`),
    /** The edge's comparison of `version` as a shadow, from its drift report; null when the edge could not read its counts. */
    shadowComparison: async (name: string, version: number) => (await json<{ shadow_comparison?: ShadowPair[] | null }>(`${model(name)}/versions/${version}/drift`)).shadow_comparison ?? null,
    backendStats: () => json<BackendStats>('/v1/backend/stats'),
    controller: () => json<ControllerSettings>('/v1/rollout/controller'),
    /** Realized (feedback) and estimated quality of each served version over the last `window` (15m … 168h). */
    quality: async (name: string, window: string) => (await json<{ versions: VersionQuality[] }>(`${model(name)}/quality?window=${encodeURIComponent(window)}`)).versions,
    /** Pauses or resumes the canary if the rollout is still at the revision `etag` names; a 412 says it is not. */
    canary: async (name: string, action: 'pause' | 'resume', etag: string): Promise<RolloutState> => {
      const res = await call(`${model(name)}/rollout/${action}`, { method: 'POST', headers: { 'if-match': etag } })
      return { ...((await res.json()) as z.infer<typeof rolloutState>), etag: res.headers.get('etag') ?? '' }
    },
    /** Replaces the rollout if it is still at the revision `etag` names; a 412 says it is not. */
    putRollout: async (name: string, rollout: RolloutPut, etag: string): Promise<RolloutState> => {
      const res = await call(`${model(name)}/rollout`, { method: 'PUT', headers: { 'content-type': 'application/json', 'if-match': etag }, body: JSON.stringify(rollout) })
      return { ...((await res.json()) as z.infer<typeof rolloutState>), etag: res.headers.get('etag') ?? '' }
    },
  }
}

export type Api = ReturnType<typeof createApi>
