import type { ProtocolReader, Transport } from '../backend-client/transport.ts'
import { FallbackTransport } from '../backend-client/fallback.ts'
import { RATE_LIMIT, TIER_PROBLEMS, type ParameterName } from '../openapi/components.ts'
import { modelMetadata, modelReady, serverLive, serverReady } from '../openapi/schemas.ts'
import { requestDeadline } from '../pipeline/forward/deadline.ts'
import type { RequestIdVariables } from '../pipeline/request-id/index.ts'
import type { Responder } from '../pipeline/stage.ts'
import { answer, route } from './route.ts'

/** The backend path of a model route, from its own (decoded) parameters; the backend judges them. */
const modelPath = (model: string, version: string | undefined, suffix: string): string =>
  `/v2/models/${encodeURIComponent(model)}${version === undefined ? '' : `/versions/${encodeURIComponent(version)}`}${suffix}`

/** Open Inference Protocol metadata or readiness of a model, passed on as the backend answers it. */
const passModelRead = (suffix: '' | '/ready'): Responder<RequestIdVariables & { isolate: { reader: Pick<ProtocolReader, 'read'> } }> =>
  async function passModelRead(c) {
    const { model, version } = c.req.param() as { model: string; version?: string }
    const { status, body } = await c.get('isolate').reader.read(modelPath(model, version, suffix), c.get('requestId'), requestDeadline(c))
    return c.json(body, status)
  }

/** Live while it answers: the edge's own, calling nothing. */
const serverLiveness = (): Responder<object> =>
  function serverLive(c) {
    return c.json({ live: true })
  }

/** Ready unless its calls to the backend are going unanswered with no Lambda tier to fall back on; calls nothing and names no backend instance. */
const serverReadiness = (): Responder<{ isolate: { reader: Pick<ProtocolReader, 'health'>; transport: Transport } }> =>
  function serverReady(c) {
    const { reader, transport } = c.get('isolate')
    const ready = reader.health().ready || (transport instanceof FallbackTransport && transport.fallback !== undefined)
    return c.json({ ready }, ready ? 200 : 503)
  }

const metadataRoute = (path: string, operationId: string, summary: string, parameters: readonly ParameterName[]) =>
  route({
    method: 'get', path, guard: 'predict', operationId, summary, tag: 'inference', parameters,
    answers: { 200: { description: 'the backend\'s model metadata', schema: modelMetadata, headers: RATE_LIMIT } },
    problems: [400, ...TIER_PROBLEMS],
    handle: answer(passModelRead('')),
  })

const readyRoute = (path: string, operationId: string, summary: string, parameters: readonly ParameterName[]) =>
  route({
    method: 'get', path, guard: 'predict', operationId, summary, tag: 'inference', parameters,
    answers: {
      200: { description: 'the model is ready (the backend\'s answer)', schema: modelReady },
      503: { description: 'the model is not ready: the backend\'s `{"ready": false}`, or a problem when the backend could not be asked', schema: modelReady, headers: ['RetryAfter'], orProblem: true },
    },
    problems: [400, 404, 502, 504],
    handle: answer(passModelRead('/ready')),
  })

/**
 * Open Inference Protocol metadata and readiness of models, passed on as the backend answers
 * them: `GET /v2/models/{m}[/versions/{v}][/ready]` (the predict scope). `GET /v2/health/{live,ready}`
 * (no key, for probes) are the edge's own.
 */
export const oipRoutes = () => [
  metadataRoute('/v2/models/:model', 'getModelMetadata', 'Model metadata (Open Inference Protocol)', ['Model']),
  metadataRoute('/v2/models/:model/versions/:version', 'getModelVersionMetadata', 'Metadata of a model version (Open Inference Protocol)', ['Model', 'Version']),
  readyRoute('/v2/models/:model/ready', 'getModelReady', 'Model readiness (Open Inference Protocol)', ['Model']),
  readyRoute('/v2/models/:model/versions/:version/ready', 'getModelVersionReady', 'Readiness of a model version (Open Inference Protocol)', ['Model', 'Version']),
  route({
    method: 'get',
    path: '/v2/health/live',
    guard: 'none',
    operationId: 'getServerLive',
    summary: 'Edge liveness (Open Inference Protocol)',
    description: 'No key: for probes. The edge answers it itself, without calling the backend.',
    tag: 'inference',
    answers: { 200: { description: 'the edge is live', schema: serverLive } },
    problems: [429, 500],
    handle: answer(serverLiveness()),
  }),
  route({
    method: 'get',
    path: '/v2/health/ready',
    guard: 'none',
    operationId: 'getServerReady',
    summary: 'Edge readiness (Open Inference Protocol)',
    description: 'No key: for probes. From the edge\'s own calls to the backend, without calling it: not ready while they go unanswered and no Lambda tier can take them.',
    tag: 'inference',
    answers: {
      200: { description: 'the edge is ready', schema: serverReady },
      503: { description: 'the edge is not ready: its calls to the backend are going unanswered', schema: serverReady, orProblem: true },
    },
    problems: [429, 500],
    handle: answer(serverReadiness()),
  }),
] as const
