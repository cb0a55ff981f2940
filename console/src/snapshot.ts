import type { Api, BackendStats, DriftReport, HistoryEntry, ModelDescription, RolloutState } from './api.ts'

/** The drift windows the heatmap shows, each ending now: its columns. */
export const DRIFT_WINDOWS = [
  { query: '5m', label: 'last 5 min' },
  { query: '15m', label: 'last 15 min' },
  { query: '1h', label: 'last 1 h' },
  { query: '3h', label: 'last 3 h' },
] as const

/** The window the histogram and health figures are read from (the drift API's default). */
export const MAIN_WINDOW = '15m'

export interface ModelState {
  description: ModelDescription
  state: RolloutState
}

export interface VersionDrift {
  version: number
  /** The arms serving this version, e.g. "stable 95%". */
  arms: string[]
  /** One per DRIFT_WINDOWS entry, in order: the report, or why there is none. */
  windows: Array<DriftReport | string>
}

/** Everything the views show, read in one refresh. */
export interface Snapshot {
  at: number
  models: ModelState[]
  selected: ModelState
  history: HistoryEntry[]
  drift: VersionDrift[]
  /** The backend's stats, or why they could not be read. */
  backend: BackendStats | string
}

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err))

/**
 * One refresh: every model's description and rollout, and for the selected model its history
 * and each arm version's drift report per window; the backend's stats beside. A refused key
 * fails the whole refresh; a missing drift report or backend stats shows as its reason.
 */
export const loadSnapshot = async (api: Api, wanted: string | undefined): Promise<Snapshot> => {
  const names = await api.models()
  if (names.length === 0) throw new Error('the backend serves no models')
  const backend = api.backendStats().catch(reason)
  const models = await Promise.all(names.map(async (name) => ({ description: await api.describe(name), state: await api.rollout(name) })))
  const selected = models.find((m) => m.description.name === wanted) ?? models[0]
  const name = selected.description.name
  const versions = [...new Set(selected.state.rollout.arms.map((a) => a.version))]
  const [history, drift] = await Promise.all([
    api.history(name),
    Promise.all(versions.map(async (version): Promise<VersionDrift> => ({
      version,
      arms: selected.state.rollout.arms.filter((a) => a.version === version).map((a) => `${a.variant} ${a.weight}%`),
      windows: await Promise.all(DRIFT_WINDOWS.map((w) => api.drift(name, version, w.query).catch(reason))),
    }))),
  ])
  return { at: Date.now(), models, selected, history, drift, backend: await backend }
}
