import { z } from 'zod'
import { rolloutSchema } from './routing/rollout.ts'

/**
 * The edge API's OpenAPI 3.1 document, generated from zod schemas. Predict bodies are checked at
 * run time against a schema compiled from each model's feature spec (`GET /v1/models/{model}`
 * lists the features); this document gives their common shape.
 */
const featureValue = z.union([z.number(), z.boolean(), z.string()])

const schemas = {
  PredictRequest: z.object({
    instances: z.array(z.record(z.string(), featureValue)).min(1).describe('One object per row, feature name → value'),
    entity: z.record(z.string(), z.string()).optional().describe('Entity ids for feature enrichment, e.g. {"user_id": "u-1"}'),
  }),
  PredictResponse: z.object({
    model: z.string(),
    version: z.string(),
    variant: z.string(),
    request_id: z.string(),
    predictions: z.array(z.object({ label: z.string(), probability: z.number(), scores: z.record(z.string(), z.number()) })),
  }),
  Problem: z.object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string().optional(),
    request_id: z.string().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    /** On /v2 routes: the detail again, where Open Inference Protocol clients read it. */
    error: z.string().optional(),
  }),
  Rollout: rolloutSchema,
  InferRequest: z.object({
    id: z.string().optional(),
    parameters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    inputs: z.array(z.object({ name: z.string(), shape: z.array(z.number().int()), datatype: z.string(), data: z.array(z.unknown()) })),
    outputs: z.array(z.object({ name: z.string() })).optional(),
  }),
}

const ref = (name: keyof typeof schemas) => ({ $ref: `#/components/schemas/${name}` })
const json = (name: keyof typeof schemas) => ({ content: { 'application/json': { schema: ref(name) } } })
const problems = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [String(s), { description: 'problem', content: { 'application/problem+json': { schema: ref('Problem') } } }]))
const modelParam = { name: 'model', in: 'path', required: true, schema: { type: 'string' } }
const versionParam = { name: 'version', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } }
const security = [{ bearer: [] }, { apiKey: [] }]
const inferOperation = (parameters: object[]) => ({
  summary: 'Open Inference Protocol pass-through',
  parameters,
  security,
  requestBody: { required: true, ...json('InferRequest') },
  responses: { '200': { description: 'infer response' }, ...problems(400, 401, 403, 404, 413, 415, 429, 503, 504) },
})

/** A read of the Open Inference Protocol passed through from the backend as it answered. */
const passThrough = (summary: string, parameters: object[], guarded: boolean, extra: Record<string, object> = {}) => ({
  get: {
    summary,
    parameters,
    // Health is for probes and needs no key, as on the backend.
    security: guarded ? security : [],
    responses: { '200': { description: "the backend's answer" }, ...problems(...(guarded ? [400, 401, 403, 404, 429] : []), 502, 503, 504), ...extra },
  },
})
const notReady = {
  '503': {
    description: "not ready: the backend's {ready: false}, or a problem when it could not be asked",
    content: { 'application/json': { schema: { type: 'object' } }, 'application/problem+json': { schema: ref('Problem') } },
  },
}

export const openApiDocument = () => ({
  openapi: '3.1.0',
  info: { title: 'edge-infer', version: '0.1.0', description: 'Prediction API for ONNX models at the edge.' },
  components: {
    schemas: Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })])),
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' }, apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' } },
  },
  paths: {
    '/v1/models/{model}/predict': {
      post: {
        summary: 'Predict labels for instances',
        parameters: [
          modelParam,
          { name: 'X-Model-Version', in: 'header', schema: { type: 'string' }, description: 'pin a version' },
          { name: 'X-Experiment-Key', in: 'header', schema: { type: 'string' }, description: 'sticky key when no entity is sent' },
          { name: 'X-Request-Deadline-Ms', in: 'header', schema: { type: 'integer' } },
        ],
        security,
        requestBody: { required: true, ...json('PredictRequest') },
        responses: { '200': { description: 'predictions', ...json('PredictResponse') }, ...problems(400, 401, 403, 404, 413, 415, 429, 502, 503, 504) },
      },
    },
    '/v2/models/{model}/infer': { post: inferOperation([modelParam]) },
    '/v2/models/{model}/versions/{version}/infer': { post: inferOperation([modelParam, versionParam]) },
    '/v2/models/{model}': passThrough('Model metadata (Open Inference Protocol), newest served version', [modelParam], true),
    '/v2/models/{model}/versions/{version}': passThrough('Model metadata of a version (Open Inference Protocol)', [modelParam, versionParam], true),
    '/v2/models/{model}/ready': passThrough('Model readiness (Open Inference Protocol)', [modelParam], true, notReady),
    '/v2/models/{model}/versions/{version}/ready': passThrough('Readiness of a model version (Open Inference Protocol)', [modelParam, versionParam], true, notReady),
    '/v2/health/live': passThrough('Backend liveness (Open Inference Protocol), no key', [], false),
    '/v2/health/ready': passThrough('Backend readiness (Open Inference Protocol), no key', [], false, notReady),
    '/v1/models': {
      get: { summary: 'Models a client may call', security, responses: { '200': { description: 'model names' }, ...problems(401, 503) } },
    },
    '/v1/models/{model}': {
      get: { summary: 'Versions and rollout arms; features and labels when the model has them (predict)', parameters: [modelParam], security, responses: { '200': { description: 'model' }, ...problems(401, 404) } },
    },
    '/v1/models/{model}/rollout': {
      get: { summary: 'Rollout state (admin)', parameters: [modelParam], security, responses: { '200': { description: 'rollout with ETag' }, ...problems(401, 403, 404) } },
      put: {
        summary: 'Replace the rollout (admin, compare-and-set with If-Match)',
        parameters: [modelParam, { name: 'If-Match', in: 'header', required: true, description: 'the ETag of the GET this replaces, a list of them, or * for the stored revision (428 without it, 412 when none is current)', schema: { type: 'string' } }],
        security,
        requestBody: { required: true, ...json('Rollout') },
        responses: { '200': { description: 'stored' }, ...problems(400, 401, 403, 404, 412, 428) },
      },
    },
    '/v1/models/{model}/rollout/history': {
      get: {
        summary: 'Rollout decisions (controller) and changes (PUT), newest first (admin)',
        parameters: [modelParam, { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500 } }],
        security,
        responses: { '200': { description: '{model, entries}' }, ...problems(400, 401, 403) },
      },
    },
    '/v1/models/{model}/versions/{version}/drift': {
      get: {
        summary: "The backend's drift report of a version: per-feature statistics, thresholds and verdicts (admin)",
        parameters: [
          modelParam,
          versionParam,
          { name: 'window', in: 'query', schema: { type: 'string', default: '15m' }, description: 'e.g. 15m, 90, 2h (at most 3 h)' },
        ],
        security,
        responses: { '200': { description: 'drift report' }, ...problems(400, 401, 403, 404, 502, 503) },
      },
    },
    '/metrics': {
      get: {
        summary: 'Prometheus counters of input fixes per API key (admin)',
        security,
        responses: { '200': { description: 'text/plain; version=0.0.4' }, ...problems(401, 403) },
      },
    },
  },
})
