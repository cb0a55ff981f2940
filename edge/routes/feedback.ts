import { minuteOf } from '../../shared/drift/report.ts'
import * as z from 'zod'
import { formatPath } from '../format.ts'
import { RATE_LIMIT } from '../openapi/components.ts'
import { keyName } from '../stores/keys/api-key.ts'
import type { AuthVariables } from '../pipeline/auth/index.ts'
import type { BodyVariables } from '../pipeline/body/index.ts'
import { jsonBody } from '../pipeline/body/json-body.ts'
import type { Responder } from '../pipeline/stage.ts'
import { Problem } from '../problem.ts'
import type { GroundTruthStore, LabelWrite, Served, ServedKey, ServedRecord } from '../stores/ground-truth/ground-truth-store.ts'
import type { RequestMetrics } from '../stores/tallies/tally.ts'
import { answer, route } from './route.ts'

/** Most feedback items one request may carry. */
export const MAX_FEEDBACK_ITEMS = 1_000

const item = z.strictObject({
  request_id: z.string().regex(/^[A-Za-z0-9._:-]{8,128}$/, 'must be the request id the predict answer carried'),
  label: z.string().min(1).max(256),
  index: z.number().int().min(0).optional().describe('the instance of the request; may be left out only when the request had one'),
  tenant: keyName.optional().describe("whose prediction it is; default the key's own tenant; another tenant's only with a key that also holds the admin scope"),
})

/** `POST /v1/feedback`'s body: one item, or an array of them. */
export const feedbackRequest = z.union([item, z.array(item).min(1, 'must hold at least one item').max(MAX_FEEDBACK_ITEMS, `must hold at most ${MAX_FEEDBACK_ITEMS} items`)])

const FEEDBACK_RESULTS = ['accepted', 'duplicate', 'unknown_or_expired', 'invalid_label', 'invalid_index'] as const
export type FeedbackResult = (typeof FEEDBACK_RESULTS)[number]

const itemResult = z.object({
  request_id: z.string(),
  index: z.number().int().nullable().describe('the instance labelled; null when the item named none and none could be taken'),
  result: z.enum(FEEDBACK_RESULTS),
  detail: z.string().optional(),
})
type FeedbackItemResult = z.infer<typeof itemResult>

/** The answer: how many items got each result, and each item's, in the order sent. */
export const feedbackResponse = z.object({
  ...Object.fromEntries(FEEDBACK_RESULTS.map((r) => [r, z.number().int().nonnegative()])) as Record<FeedbackResult, z.ZodNumber>,
  results: z.array(itemResult),
})

const unavailable = (detail: string) => new Problem(503, 'Service Unavailable', detail, { slug: 'feedback-unavailable', headers: { 'retry-after': '1' } })

/** The instance an item labels, or why it names none of the request's. */
const instanceOf = (record: ServedRecord, index: number | undefined): number | string => {
  const n = record.scores.length
  if (index === undefined) return n === 1 ? 0 : `the request had ${n} instances: name one with "index"`
  return index < n ? index : `the request had ${n} instance${n === 1 ? '' : 's'}; index ${index} is not one of them`
}

/**
 * `POST /v1/feedback` (the `feedback` scope): ground-truth labels for predictions the edge served,
 * one item or an array of up to `MAX_FEEDBACK_ITEMS`. Well-formed bodies get 200 with a result per
 * item, in order, and the count of each: `accepted` (counted, now or by an earlier send of the same
 * label), `duplicate` (the instance holds another label; the first stands), `unknown_or_expired`
 * (no record: never served with feedback on, past its TTL, or not this tenant's), `invalid_label`
 * (not one of the model's labels), `invalid_index`. Accepted labels count once into the served
 * version's realized quality in the minute (and hour) the prediction was served, however late the label comes. A request id names a prediction of the
 * caller's tenant only; a key that also holds `admin` may name another tenant per item.
 */
const postFeedback = (): Responder<{ isolate: { groundTruth: Pick<GroundTruthStore, 'records' | 'label'>; requestMetrics: Pick<RequestMetrics, 'feedback'> } } & AuthVariables & BodyVariables> =>
  async function postFeedback(c) {
    const parsed = feedbackRequest.safeParse(jsonBody(c.get('bodyText')))
    if (!parsed.success) {
      const errors = parsed.error.issues.map((i) => ({ path: formatPath(i.path) || '(body)', message: i.message }))
      throw new Problem(400, 'Bad Request', `the feedback is invalid: send {"request_id", "label", "index"?} or an array of up to ${MAX_FEEDBACK_ITEMS} of them`, { slug: 'invalid-feedback', errors })
    }
    const items = Array.isArray(parsed.data) ? parsed.data : [parsed.data]
    const caller = c.get('caller')
    const foreign = items.find((i) => i.tenant !== undefined && i.tenant !== caller.tenant)
    if (foreign && !caller.scopes.includes('admin')) {
      throw new Problem(403, 'Forbidden', `the API key "${caller.name}" may label only its own tenant's predictions ("${caller.tenant}"), not "${foreign.tenant}"`, { slug: 'foreign-tenant' })
    }
    const { groundTruth, requestMetrics } = c.get('isolate')
    const keyOf = (i: (typeof items)[number]): ServedKey => ({ tenant: i.tenant ?? caller.tenant, requestId: i.request_id })
    const names = new Map<string, ServedKey>()
    for (const i of items) names.set(JSON.stringify(keyOf(i)), keyOf(i))
    const found = await groundTruth.records([...names.values()]).catch(() => {
      throw unavailable('the served-prediction store could not be read right now; nothing was recorded, retry shortly')
    })
    const records = new Map([...names.keys()].map((name, i) => [name, found[i]]))
    const recordOf = (i: (typeof items)[number]): Served | undefined => records.get(JSON.stringify(keyOf(i)))
    const now = Date.now()
    const results: FeedbackItemResult[] = []
    const pending: Array<{ at: number; write: LabelWrite }> = []
    items.forEach((sent, at) => {
      const { request_id, label, index } = sent
      const record = recordOf(sent)
      if (!record) return results.push({ request_id, index: index ?? null, result: 'unknown_or_expired' })
      const instance = instanceOf(record, index)
      if (typeof instance === 'string') return results.push({ request_id, index: index ?? null, result: 'invalid_index', detail: instance })
      if (!record.labels.includes(label)) {
        return results.push({ request_id, index: instance, result: 'invalid_label', detail: `model "${record.model}" labels are ${record.labels.map((l) => `"${l}"`).join(', ')}` })
      }
      results.push({ request_id, index: instance, result: 'accepted' })
      pending.push({
        at,
        write: {
          key: keyOf(sent), servedId: record.servedId, index: instance, label,
          count: { model: record.model, version: record.version, minute: minuteOf(record.at), score: record.scores[instance], positive: label === record.labels[1], delaySeconds: Math.max(0, (now - record.at) / 1_000) },
        },
      })
    })
    const outcomes = await groundTruth.label(pending.map((p) => p.write)).catch(() => {
      // The write may have landed (a timeout is not a "no"); each label is written at most once, so the same feedback may be sent again.
      throw unavailable('the labels could not be confirmed as recorded (they may or may not have been); send the same feedback again: a label already recorded is not counted twice')
    })
    pending.forEach(({ at }, i) => {
      const outcome = outcomes[i]
      if (outcome === 'duplicate' || outcome === 'gone') results[at] = { ...results[at], result: outcome === 'duplicate' ? 'duplicate' : 'unknown_or_expired' }
    })
    const tally = Object.fromEntries(FEEDBACK_RESULTS.map((r) => [r, 0])) as Record<FeedbackResult, number>
    results.forEach((r, i) => {
      tally[r.result]++
      // The records name only models the catalog described when they were served.
      requestMetrics.feedback(recordOf(items[i])?.model ?? 'none', r.result)
    })
    return c.json({ ...tally, results })
  }

export const feedbackRoutes = () => [
  route({
    method: 'post',
    path: '/v1/feedback',
    guard: 'feedback',
    body: feedbackRequest,
    operationId: 'postFeedback',
    summary: 'Ground-truth labels for served predictions',
    description: 'One item `{request_id, label, index?}` or an array of up to 1000, labels arriving any time within the TTL (the `feedback.ttl_seconds` of the model config.json, else FEEDBACK_TTL_SECONDS, default 30 days) for models with feedback on (a `feedback` block in their config.json, or named by the FEEDBACK_MODELS override). A request id names a prediction made by a key of the caller\'s tenant (the key entry\'s `tenant`, else its name); a key that also holds the admin scope may name another tenant per item (`tenant`), any other key naming one is refused with 403. `index` names the instance and may be left out only for a request with one. A well-formed body is answered 200 with a result per item, in order, and the count of each: accepted (counted once, now or by an earlier send of the same label), duplicate (the instance holds another label; the first stands), unknown_or_expired (never recorded, past its TTL, or not the tenant\'s), invalid_label, invalid_index. Nothing is silently dropped. A 503 after the labels were sent means their outcome is unknown: sending the same feedback again is safe, a label is counted at most once.',
    tag: 'feedback',
    answers: { 200: { description: 'the result of each item', schema: feedbackResponse, headers: RATE_LIMIT } },
    handle: answer(postFeedback()),
  }),
] as const
