import { generateApplicants, type Applicant } from '../../tools/training/applicants.ts'

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
}

/**
 * Synthetic applicants (edited) sent through the edge pinned to one version, as requests of
 * `ROWS_PER_REQUEST`; resolves with how many requests got each status. The user id is unknown to
 * the feature store, so the entity features the applicants carry stand where the spec lets them
 * override (the canary repository's does).
 */
export const sendPinnedTraffic = async ({ edgeUrl, key, model, version, rows, seed, edit = (a) => a }: PinnedTraffic): Promise<Map<number, number>> => {
  const applicants = generateApplicants(rows, seed).applicants.map(edit)
  const statuses = new Map<number, number>()
  for (let at = 0; at < rows; at += ROWS_PER_REQUEST) {
    const res = await fetch(`${edgeUrl}/v1/models/${model}/predict`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'x-model-version': String(version) },
      body: JSON.stringify({ instances: applicants.slice(at, at + ROWS_PER_REQUEST), entity: { user_id: `synthetic-${seed}` } }),
    })
    await res.arrayBuffer()
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
  }
  return statuses
}
