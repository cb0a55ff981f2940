import { generateApplicants, type Applicant } from '../tools/training/applicants.ts'

/** Instances per predict request: the edge's default `MAX_INSTANCES`. */
export const ROWS_PER_REQUEST = 64

/** A rollout that starts `candidate` as a 1% canary beside `stable`, for the controller to drive. */
export const canaryRollout = (stable: number, candidate: number) => ({
  salt: `canary-${stable}-${candidate}`,
  arms: [{ variant: 'stable', version: stable, weight: 99 }, { variant: 'canary', version: candidate, weight: 1 }],
  canary: { variant: 'canary', baseline_variant: 'stable' },
})

export interface PinnedTraffic {
  edgeUrl: string
  /** An API key with the predict scope. */
  key: string
  model: string
  version: number
  rows: number
  /** Of the applicant generator: each seed is a different sample of the training distribution. */
  seed: number
  edit?: (applicant: Applicant) => Applicant
  /** Sent as X-Request-Deadline-Ms: how long each request may take. */
  deadlineMs?: number
  /** Each answered request's id and its rows' true labels (1 = labels[1]), for feedback. */
  answered?: (answer: LabelledAnswer) => void
}

/** A predict request the edge answered, with the generator's ground truth for its instances. */
export interface LabelledAnswer {
  request_id: string
  labels: number[]
}

/**
 * Synthetic applicants (edited) sent through the edge pinned to one version, as requests of
 * `ROWS_PER_REQUEST`; resolves with how many requests got each status. The user id is unknown to
 * the feature store, so the entity features the applicants carry stand where the spec lets them
 * override (the canary repository's does).
 */
export const sendPinnedTraffic = async ({ edgeUrl, key, model, version, rows, seed, edit = (a) => a, deadlineMs, answered }: PinnedTraffic): Promise<Map<number, number>> => {
  const sample = generateApplicants(rows, seed)
  const applicants = sample.applicants.map(edit)
  const statuses = new Map<number, number>()
  for (let at = 0; at < rows; at += ROWS_PER_REQUEST) {
    const res = await fetch(`${edgeUrl}/v1/models/${model}/predict`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'x-model-version': String(version), ...(deadlineMs ? { 'x-request-deadline-ms': String(deadlineMs) } : {}) },
      body: JSON.stringify({ instances: applicants.slice(at, at + ROWS_PER_REQUEST), entity: { user_id: `synthetic-${seed}` } }),
    })
    if (answered && res.status === 200) answered({ request_id: ((await res.json()) as { request_id: string }).request_id, labels: [...sample.labels.subarray(at, at + ROWS_PER_REQUEST)] })
    else await res.arrayBuffer()
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
  }
  return statuses
}

/** Most items per feedback request: the edge's limit. */
const FEEDBACK_BATCH = 1_000
/** Sends of one batch that the edge answers 503 or 429 (each after its Retry-After). */
const FEEDBACK_SENDS = 4

const postFeedback = (edgeUrl: string, key: string, body: string): Promise<Response> =>
  fetch(`${edgeUrl}/v1/feedback`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body })

/**
 * Sends each answered row's true label as feedback (`labels[label]` names it), in batches;
 * resolves with how many items got each result.
 */
export const sendFeedback = async (edgeUrl: string, key: string, answers: readonly LabelledAnswer[], labels: readonly string[]): Promise<Record<string, number>> => {
  const items = answers.flatMap((a) => a.labels.map((label, index) => ({ request_id: a.request_id, index, label: labels[label] })))
  const results: Record<string, number> = {}
  for (let at = 0; at < items.length; at += FEEDBACK_BATCH) {
    const body = JSON.stringify(items.slice(at, at + FEEDBACK_BATCH))
    let res = await postFeedback(edgeUrl, key, body)
    // A 503 says the labels may or may not have been recorded and a resend is safe (a label
    // already recorded is not counted twice): resend the same batch, as a client should.
    for (let attempt = 1; (res.status === 503 || res.status === 429) && attempt < FEEDBACK_SENDS; attempt++) {
      await res.arrayBuffer()
      await new Promise((resolve) => setTimeout(resolve, Math.min(5, Number(res.headers.get('retry-after')) || 1) * 1_000))
      res = await postFeedback(edgeUrl, key, body)
    }
    if (res.status !== 200) throw new Error(`feedback answered ${res.status}: ${await res.text()}`)
    for (const r of ((await res.json()) as { results: Array<{ result: string }> }).results) results[r.result] = (results[r.result] ?? 0) + 1
  }
  return results
}
