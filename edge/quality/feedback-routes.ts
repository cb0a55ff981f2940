import { Hono } from 'hono'
import { minuteOf } from '../../shared/drift/report.ts'
import { z } from 'zod'
import type { AppEnv } from '../env.ts'
import { formatPath } from '../format.ts'
import { jsonBody } from '../pipeline/body/json-body.ts'
import { Problem } from '../problem.ts'
import type { LabelCount, LabelKey, ServedRecord } from './store.ts'

/** Most feedback items one request may carry. */
export const MAX_FEEDBACK_ITEMS = 1_000

const item = z.strictObject({
  request_id: z.string().regex(/^[A-Za-z0-9._:-]{8,128}$/, 'must be the request id the predict answer carried'),
  label: z.string().min(1).max(256),
  index: z.number().int().min(0).optional().describe('the instance of the request; may be left out only when the request had one'),
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

const unavailable = (what: string) =>
  new Problem(503, 'Service Unavailable', `the served-prediction store could not ${what} right now; nothing was recorded, retry shortly`, { slug: 'feedback-unavailable', headers: { 'retry-after': '1' } })

/** The instance an item labels, or why it names none of the request's. */
const instanceOf = (record: ServedRecord, index: number | undefined): number | string => {
  const n = record.scores.length
  if (index === undefined) return n === 1 ? 0 : `the request had ${n} instances: name one with "index"`
  return index < n ? index : `the request had ${n} instance${n === 1 ? '' : 's'}; index ${index} is not one of them`
}

/**
 * `POST /v1/feedback` (the `feedback` scope): ground-truth labels for predictions the edge served,
 * one item or an array of up to `MAX_FEEDBACK_ITEMS`. Well-formed bodies get 200 with a result per
 * item, in order, and the count of each: `accepted`, `duplicate` (the instance had a label; the
 * first stands), `unknown_or_expired` (no record: never served with feedback on, or past its
 * TTL), `invalid_label` (not one of the model's labels), `invalid_index`. Accepted labels count
 * into the served version's realized quality for the current minute.
 */
export const feedbackRoutes = () =>
  new Hono<AppEnv>().post('/v1/feedback', async (c) => {
    const parsed = feedbackRequest.safeParse(jsonBody(c.get('bodyText')))
    if (!parsed.success) {
      const errors = parsed.error.issues.map((i) => ({ path: formatPath(i.path) || '(body)', message: i.message }))
      throw new Problem(400, 'Bad Request', `the feedback is invalid: send {"request_id", "label", "index"?} or an array of up to ${MAX_FEEDBACK_ITEMS} of them`, { slug: 'invalid-feedback', errors })
    }
    const items = Array.isArray(parsed.data) ? parsed.data : [parsed.data]
    const { groundTruth, requestMetrics } = c.get('isolate')
    const ids = [...new Set(items.map((i) => i.request_id))]
    const found = await groundTruth.records(ids).catch(() => {
      throw unavailable('be read')
    })
    const records = new Map(ids.map((id, i) => [id, found[i]]))
    const now = Date.now()
    const results: FeedbackItemResult[] = []
    const pending: Array<{ at: number; key: LabelKey; label: LabelCount }> = []
    items.forEach(({ request_id, label, index }, at) => {
      const record = records.get(request_id)
      if (!record) return results.push({ request_id, index: index ?? null, result: 'unknown_or_expired' })
      const instance = instanceOf(record, index)
      if (typeof instance === 'string') return results.push({ request_id, index: index ?? null, result: 'invalid_index', detail: instance })
      if (!record.labels.includes(label)) {
        return results.push({ request_id, index: instance, result: 'invalid_label', detail: `model "${record.model}" labels are ${record.labels.map((l) => `"${l}"`).join(', ')}` })
      }
      results.push({ request_id, index: instance, result: 'accepted' })
      pending.push({
        at,
        key: { requestId: request_id, index: instance },
        label: { model: record.model, version: record.version, minute: minuteOf(now), score: record.scores[instance], positive: label === record.labels[1], delaySeconds: Math.max(0, (now - record.at) / 1_000) },
      })
    })
    const marks = await groundTruth.mark(pending.map((p) => p.key)).catch(() => {
      throw unavailable('record the labels')
    })
    const first = pending.filter((p, i) => {
      if (marks[i] !== 'first') results[p.at] = { ...results[p.at], result: marks[i] === 'repeat' ? 'duplicate' : 'unknown_or_expired' }
      return marks[i] === 'first'
    })
    await groundTruth.count(first.map((p) => p.label)).catch(async () => {
      // Marked but not counted: take the marks back (as far as Redis lets us) so a retry counts them.
      await groundTruth.unmark(first.map((p) => p.key)).catch(() => {})
      throw unavailable('count the labels')
    })
    const tally = Object.fromEntries(FEEDBACK_RESULTS.map((r) => [r, 0])) as Record<FeedbackResult, number>
    results.forEach((r, i) => {
      tally[r.result]++
      // The records name only models the catalog described when they were served.
      requestMetrics.feedback(records.get(items[i].request_id)?.model ?? 'none', r.result)
    })
    return c.json({ ...tally, results })
  })
