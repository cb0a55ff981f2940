import type { Api, BackendStats, ControllerSettings, DriftReport, VersionQuality, HistoryEntry, ModelDescription, RolloutState, ShadowPair } from './api.ts'

/**
 * The window lengths the drift view offers. One report per version carries the consecutive
 * windows its alert rule evaluated (up to 6), so the heatmap spans six of them.
 */
export const DRIFT_WINDOWS = [
  { query: '15m', label: '15 min windows, last 90 min' },
  { query: '30m', label: '30 min windows, last 3 h' },
] as const

export type DriftWindowLength = (typeof DRIFT_WINDOWS)[number]['query']

/** The quality windows shown side by side, the latest hour to a week: how quality moved over time. */
export const QUALITY_WINDOWS = ['1h', '6h', '24h', '168h'] as const

/** The drift API's default length. */
export const DEFAULT_DRIFT_WINDOW: DriftWindowLength = '15m'

export interface ModelState {
  description: ModelDescription
  state: RolloutState
}

export interface VersionDrift {
  version: number
  /** The arms serving this version, e.g. "stable 95%". */
  arms: string[]
  /** The report over windows of the snapshot's length, or why there is none. */
  report: DriftReport | string
}

/** Everything the views show, read in one refresh. */
export interface Snapshot {
  at: number
  models: ModelState[]
  selected: ModelState
  history: HistoryEntry[]
  /** The window length the drift reports were asked for. */
  driftWindow: DriftWindowLength
  drift: VersionDrift[]
  /** The selected model's realized and estimated quality per version over each of `QUALITY_WINDOWS`, or why it could not be read. */
  quality: Array<{ window: string; versions: VersionQuality[] }> | string
  /** The controller's ladder and step rules, or why they could not be read. */
  controller: ControllerSettings | string
  /** The backend's stats, or why they could not be read. */
  backend: BackendStats | string
  /** The selected model's shadow version compared with the served ones (null: the edge could not read its counts), why that could not be read, or undefined without a shadow. */
  shadow?: ShadowPair[] | null | string
}

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err))

/**
 * One refresh: every model's description and rollout, and for the selected model its history
 * and each arm version's drift report over windows of `driftWindow` (one call per version) and its
 * shadow's comparison; the backend's stats beside. A refused key fails the whole refresh; a missing drift report or backend stats shows as its reason.
 */
export const loadSnapshot = async (api: Api, wanted: string | undefined, driftWindow: DriftWindowLength = DEFAULT_DRIFT_WINDOW): Promise<Snapshot> => {
  const names = await api.models()
  if (names.length === 0) throw new Error('the backend serves no models')
  const backend = api.backendStats().catch(reason)
  const controller = api.controller().catch(reason)
  const models = await Promise.all(names.map(async (name) => ({ description: await api.describe(name), state: await api.rollout(name) })))
  const selected = models.find((m) => m.description.name === wanted) ?? models[0]
  const name = selected.description.name
  const versions = [...new Set(selected.state.rollout.arms.map((a) => a.version))]
  const shadowVersion = selected.state.rollout.shadow?.version
  const [history, drift, shadow, quality] = await Promise.all([
    api.history(name),
    Promise.all(versions.map(async (version): Promise<VersionDrift> => ({
      version,
      arms: selected.state.rollout.arms.filter((a) => a.version === version).map((a) => `${a.variant} ${a.weight}%`),
      report: await api.drift(name, version, driftWindow).catch(reason),
    }))),
    shadowVersion === undefined ? undefined : api.shadowComparison(name, shadowVersion).catch(reason),
    Promise.all(QUALITY_WINDOWS.map(async (window) => ({ window, versions: await api.quality(name, window) }))).catch(reason),
  ])
  return { at: Date.now(), models, selected, history, driftWindow, drift, quality, backend: await backend, controller: await controller, ...(shadow === undefined ? {} : { shadow }) }
}
