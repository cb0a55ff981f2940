import * as z from 'zod'
import { BATCH_REASONS } from '../../shared/protocol.ts'
import { DATATYPES } from '../../shared/datatypes.ts'
import { controllerDriftReport } from '../../shared/drift/report.ts'
import { qualityFigures } from '../../shared/quality.ts'
import { feedbackRequest, feedbackResponse } from '../routes/feedback.ts'
import { modelQualityResponse } from '../quality/model-quality.ts'
import { feature } from '../../shared/feature-spec.ts'
import { rolloutSchema } from '../rollout/rollout.ts'
import { shadowPairSchema } from '../stores/tallies/shadow.ts'

/**
 * The zod schemas the OpenAPI document is generated from: the routes' own where they validate
 * with one (the rollout a PUT takes, the feature spec the catalog lists, the drift report the
 * controller reads), and otherwise the shape each handler answers with. Tests parse the worker's
 * real answers with these, so the document cannot drift from what is served.
 */

const featureValue = z.union([z.number(), z.boolean(), z.string()])

/** Predict bodies are checked per model against its feature spec (`GET /v1/models/{model}`); this is their common shape. */
export const predictRequest = z.strictObject({
  instances: z.array(z.record(z.string(), featureValue)).min(1).max(64).describe('One object per row: feature name → value (the model\'s features, from GET /v1/models/{model}). At most MAX_INSTANCES rows (64 by default).'),
  entity: z.record(z.string(), z.string().min(1)).optional().describe('Entity ids for feature enrichment and the sticky arm, e.g. {"user_id": "u-1"}'),
})

export const prediction = z.object({
  label: z.string(),
  probability: z.number(),
  scores: z.record(z.string(), z.number()).describe('label → probability'),
})

export const predictResponse = z.object({
  model: z.string(),
  version: z.string().describe('the version that answered'),
  variant: z.string().describe('the rollout arm the request was assigned to'),
  request_id: z.string(),
  predictions: z.array(prediction).describe('one per instance, in order'),
})

const fieldError = z.object({ path: z.string(), message: z.string() })

/** RFC 9457 problem details, as the edge answers every failure (`edge/problem.ts`). */
export const problem = z.object({
  type: z.string().describe('https://edge-infer.dev/problems/<slug>'),
  title: z.string(),
  status: z.number().int(),
  detail: z.string().describe('for the client; never carries a key, a stack or an upstream body'),
  instance: z.string().optional().describe('the request path'),
  request_id: z.string().optional(),
  errors: z.array(fieldError).optional().describe('field-level complaints of a validation problem'),
})

/** On /v2 paths: a problem that also carries the Open Inference Protocol `error` member. */
export const oipProblem = problem.extend({ error: z.string().describe('the detail again, where Open Inference Protocol clients read it') })

const parameters = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
const datatype = z.enum(DATATYPES)

export const inferRequest = z.object({
  id: z.string().optional().describe('echoed in the response; the request id when absent'),
  parameters: parameters.optional(),
  inputs: z.array(z.object({ name: z.string(), shape: z.array(z.number().int()), datatype, parameters: parameters.optional(), data: z.array(z.unknown()) })),
  outputs: z.array(z.object({ name: z.string(), parameters: parameters.optional() })).optional(),
})

export const inferResponse = z.object({
  model_name: z.string(),
  model_version: z.string().optional(),
  id: z.string(),
  parameters: z.looseObject({
    queue_us: z.number(),
    compute_us: z.number(),
    batch_size: z.number().int(),
    batch_reason: z.enum(BATCH_REASONS),
  }).describe('how the request was served'),
  outputs: z.array(z.object({ name: z.string(), shape: z.array(z.number().int()), datatype, parameters: parameters.optional(), data: z.array(z.union([z.number(), z.boolean(), z.string()])) })),
})

const tensorMetadata = z.looseObject({ name: z.string(), datatype: z.string(), shape: z.array(z.number().int()) })

/** The backend's model metadata, passed through as it answered (it may carry more, e.g. features, postprocess and feedback). */
export const modelMetadata = z.looseObject({
  name: z.string(),
  versions: z.array(z.string()).optional(),
  platform: z.string(),
  inputs: z.array(tensorMetadata),
  outputs: z.array(tensorMetadata),
})

/** The backend's readiness answers, passed through: 200 when ready, 503 with `ready: false` when not. */
export const modelReady = z.looseObject({ name: z.string(), version: z.string().optional(), ready: z.boolean() })
export const serverReady = z.object({ ready: z.boolean() })
export const serverLive = z.object({ live: z.boolean() })

export const modelList = z.object({
  models: z.array(z.object({ name: z.string(), href: z.string().describe('/v1/models/{name}') })).describe('the models the backend serves'),
})

export const modelDescription = z.object({
  name: z.string(),
  versions: z.array(z.string()).describe('served versions, ascending'),
  features: z.array(feature).optional().describe('the feature spec, when the model has one (predict)'),
  labels: z.array(z.string()).optional().describe('the labels predictions name, when the model has a postprocess'),
  rollout: z.object({
    arms: rolloutSchema.shape.arms,
    pinnable: z.array(z.number().int().positive()).describe('versions X-Model-Version may pin: the listed ones and every arm\'s'),
  }),
})

export const rolloutState = z.object({
  model: z.string(),
  revision: z.number().int().nonnegative().describe('0 until a rollout is stored; the ETag is "r<revision>"'),
  source: z.enum(['stored', 'default']).describe('default: nothing stored yet, all traffic on the newest version'),
  rollout: rolloutSchema,
  rerouted: z.record(z.string(), z.number().int().nonnegative()).describe('requests of each arm this isolate sent to a stand-in arm under this revision, because the arm\'s version is not served'),
})

export const rolloutStored = z.object({
  model: z.string(),
  revision: z.number().int().positive(),
  source: z.literal('stored'),
  rollout: rolloutSchema.describe('as stored: the layout derived, canary bookkeeping filled in'),
})

/** What PUT takes: the rollout, or any object with it under `rollout` (so a GET's answer can be sent back). */
export const rolloutPut = z.union([rolloutSchema, z.looseObject({ rollout: rolloutSchema })])

const armNumbers = z.object({
  version: z.number().int(),
  rows: z.number(),
  requests: z.number(),
  errors: z.number(),
  error_rate: z.number(),
  nan_outputs: z.number(),
  p95_ms: z.number().nullable(),
  edge_failures: z.number().optional().describe('of requests and errors: calls the backend never answered (edge timeout, open circuit), counted at the edge'),
  realized: qualityFigures.nullable().optional().describe('realized quality from feedback labels in the window'),
})

export const historyEntry = z.object({
  id: z.string(),
  model: z.string(),
  time: z.string().describe('ISO 8601'),
  actor: z.string().describe('"controller", or the name of the admin key that made a manual change'),
  action: z.enum(['rollback', 'step', 'promote', 'hold', 'alert', 'start_canary', 'manual', 'pause', 'resume']),
  variant: z.string().nullable(),
  from_weight: z.number().nullable(),
  to_weight: z.number().nullable(),
  reason: z.string(),
  revision: z.number().int(),
  numbers: z.looseObject({
    window_minutes: z.number(),
    stable: armNumbers,
    canary: armNumbers,
    psi: z.number().nullable(),
    psi_warning: z.number(),
    psi_critical: z.number(),
    critical_streak: z.number().int(),
    clean_streak: z.number().int(),
  }).optional().describe('the windows behind a controller decision'),
})

export const rolloutHistory = z.object({ model: z.string(), entries: z.array(historyEntry).describe('newest first') })

/** The backend's report, passed through: the part the rollout controller acts on is pinned, the rest is the backend's. */
export const driftReport = controllerDriftReport
  .extend({
    dataset: controllerDriftReport.shape.dataset.loose(),
    prediction: controllerDriftReport.shape.prediction
      .extend({ realized_quality: qualityFigures.nullable().optional().describe('from the feedback labels that arrived in the same minutes, every isolate\'s (GET /v1/models/{m}/quality has the label counts and delays); null when none can be computed') })
      .loose(),
    health: controllerDriftReport.shape.health.loose(),
    shadow_comparison: z.array(shadowPairSchema).nullable().optional().describe('the edge\'s comparison of this version as a shadow with each version clients were served, from every isolate\'s counts since they began (the edge_infer_shadow_* metrics); empty when it never was a shadow, null when the counts cannot be read'),
  })
  .loose()

const counts = z.record(z.string(), z.number().nonnegative())

/** One replica's stats, or their sum, as edge/console/backend-stats.ts builds them. */
const replicaStatsFields = z.object({
  fetched_at: z.string().describe('ISO 8601'),
  ready: z.boolean().nullable(),
  versions: z.array(z.object({
    model: z.string(),
    version: z.string(),
    execution_provider: z.string().nullable(),
    queue_depth_rows: z.number().nonnegative(),
    queue_capacity_rows: z.number().nonnegative().nullable(),
    requests_by_status: counts,
    batches_by_reason: counts,
    batch_size: z.object({ buckets: z.array(z.object({ le: z.union([z.number(), z.literal('+Inf')]), count: z.number().nonnegative() })), count: z.number().nonnegative(), sum: z.number().nonnegative() }),
  })),
  rejections: z.array(z.object({ model: z.string(), reason: z.string(), status: z.number().int().nullable(), count: z.number().nonnegative() })),
})

/** `GET /v1/backend/stats` (edge/routes/backend-stats.ts): the replicas' stats summed, and each replica's. */
export const backendStats = replicaStatsFields.extend({
  source: z.enum(['redis', 'backend_url']).describe('`redis`: every replica\'s snapshot, summed; `backend_url`: the one replica BACKEND_URL reached (no Redis configured, or no replica published yet)'),
  replicas: z.array(replicaStatsFields.extend({
    pod: z.string().nullable().describe('the replica\'s POD_NAME (else HOSTNAME); null when read through BACKEND_URL'),
    published_at: z.string().nullable().describe('ISO 8601, when the replica wrote it; null when read through BACKEND_URL'),
  })),
})

export const health = z.object({ ok: z.literal(true), request_id: z.string() })

/** The components, by name: requests are described as clients send them (defaults optional), responses as the edge answers. */
export const requestSchemas = {
  PredictRequest: predictRequest,
  FeedbackRequest: feedbackRequest,
  InferRequest: inferRequest,
  RolloutInput: rolloutSchema,
  RolloutPut: rolloutPut,
} as const

export const responseSchemas = {
  Health: health,
  Problem: problem,
  OipProblem: oipProblem,
  Prediction: prediction,
  PredictResponse: predictResponse,
  InferResponse: inferResponse,
  ModelMetadata: modelMetadata,
  ModelReady: modelReady,
  ServerReady: serverReady,
  ServerLive: serverLive,
  ModelList: modelList,
  Feature: feature,
  ModelDescription: modelDescription,
  Rollout: rolloutSchema,
  RolloutState: rolloutState,
  RolloutStored: rolloutStored,
  HistoryEntry: historyEntry,
  RolloutHistory: rolloutHistory,
  DriftReport: driftReport,
  BackendStats: backendStats,
  FeedbackResponse: feedbackResponse,
  ModelQuality: modelQualityResponse,
} as const

export type RequestSchemaName = keyof typeof requestSchemas
export type ResponseSchemaName = keyof typeof responseSchemas
