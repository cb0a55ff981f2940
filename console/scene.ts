import type { Variant } from '../dev/canary-repository.ts'
import { canaryRollout, sendPinnedTraffic } from '../dev/canary-traffic.ts'

/** What the console is shown on: credit-risk v1 and v2 the same network, v3 scoring everyone riskier. */
export const SCENE_VERSIONS: Readonly<Record<number, Variant>> = { 1: 'same', 2: 'same', 3: { shiftLogit: 1.5 } }
export const SCENE_MODEL = 'credit-risk'
/** Rows per arm per round: above the controller's 1,000-row minimum, so each round is a verdict. */
const ROWS_PER_ROUND = 1_100

/** The controller's vars for a canary that steps on every tick (no dwell, one clean window), as demo:canary runs it. */
export const SCENE_CONTROLLER = { CONTROLLER_DWELL_MINUTES: '0', CONTROLLER_CLEAN_WINDOWS: '1', CONTROLLER_MIN_REQUESTS: '10', CONTROLLER_P95_SLACK_MS: '1000' }

export interface SceneEdge {
  url: string
  /** A key with the admin and predict scopes. */
  key: string
  /** Fires the worker's scheduled handler once, as the minute's Cron Trigger does. */
  tick(): Promise<void>
}

const call = (edge: SceneEdge, path: string, init: RequestInit = {}) =>
  fetch(`${edge.url}${path}`, { ...init, headers: { 'x-api-key': edge.key, 'content-type': 'application/json', ...init.headers } })

/** Starts `candidate` as a 1% canary beside `stable` with a PUT, as an operator would. */
export const startCanary = async (edge: SceneEdge, stable: number, candidate: number): Promise<void> => {
  const current = await call(edge, `/v1/models/${SCENE_MODEL}/rollout`)
  await current.arrayBuffer()
  const put = await call(edge, `/v1/models/${SCENE_MODEL}/rollout`, { method: 'PUT', headers: { 'if-match': current.headers.get('etag') ?? '*' }, body: JSON.stringify(canaryRollout(stable, candidate)) })
  if (put.status !== 200) throw new Error(`starting the canary answered ${put.status}: ${await put.text()}`)
  await put.arrayBuffer()
}

/** One round of the demo's traffic to both arms, then a controller tick: the canary steps, holds or rolls back. */
export const canaryRound = async (edge: SceneEdge, stable: number, candidate: number, seed: number): Promise<void> => {
  for (const [version, offset] of [[stable, 0], [candidate, 1]]) {
    const statuses = await sendPinnedTraffic({ edgeUrl: edge.url, key: edge.key, model: SCENE_MODEL, version, rows: ROWS_PER_ROUND, seed: seed * 2 + offset })
    if (![...statuses.keys()].every((s) => s === 200)) throw new Error(`traffic to v${version} got ${[...statuses].map(([s, n]) => `${n}×${s}`).join(', ')}`)
  }
  await edge.tick()
}
