import { stepChart } from '../charts.ts'
import { fixed, h, ms, percent, table } from '../dom.ts'
import type { ControllerSettings, HistoryEntry, Rollout, ShadowPair } from '../api.ts'
import type { Snapshot } from '../snapshot.ts'

/** The ladder drawn when the edge's controller settings could not be read: the controller's defaults. */
const DEFAULT_LADDER = [1, 5, 20, 50, 100] as const

/** The canary's share of the weight it and its baseline hold together, as the ladder counts it. */
export const canaryShare = (rollout: Rollout): number | undefined => {
  const canary = rollout.arms.find((a) => a.variant === rollout.canary?.variant)
  const baseline = rollout.arms.find((a) => a.variant === rollout.canary?.baseline_variant)
  if (!canary || !baseline) return undefined
  const pair = canary.weight + baseline.weight
  return pair === 0 ? 0 : Math.round((canary.weight / pair) * 10_000) / 100
}

const ladder = (steps: readonly number[], share: number | undefined): HTMLElement =>
  h('ol', { class: 'ladder' }, ...steps.map((step, i) => {
    const state = share === undefined ? '' : share === step ? 'current' : share > step ? 'passed' : (steps[i - 1] ?? 0) < share ? 'next' : ''
    return h('li', { class: `step ${state}`, attrs: { 'data-step': String(step), ...(state === 'current' ? { 'aria-current': 'step' } : {}) } }, `${step}%`)
  }))

const minutes = (ms: number) => `${Math.max(1, Math.ceil(ms / 60_000))} min`

/**
 * When the controller may next move the canary: never while paused; else once the dwell at this
 * weight is over and it has its clean windows, decided at its next tick.
 */
export const nextDecision = (rollout: Rollout, settings: ControllerSettings, now: number): string => {
  const state = rollout.canary
  if (!state) return ''
  if (state.paused_at !== undefined) return 'Paused: the controller makes no decision until the canary is resumed.'
  const clean = `${state.clean_streak} of ${settings.clean_windows} clean windows`
  const dwellEnd = state.step_started_at + settings.dwell_minutes * 60_000
  if (now < dwellEnd) return `Next step at the earliest ${new Date(dwellEnd).toLocaleTimeString()} (in ${minutes(dwellEnd - now)}), when the ${settings.dwell_minutes} min dwell at this weight ends; ${clean} so far.`
  return `Dwell done: the controller decides at its next tick (every ${settings.tick_seconds} s); a step needs ${clean}.`
}

const numbersOf = (entry: HistoryEntry): HTMLElement => {
  const n = entry.numbers!
  const arm = (key: 'stable' | 'canary') => n[key]
  const row = (label: string, value: (a: ReturnType<typeof arm>) => string) => [label, value(arm('stable')), value(arm('canary'))]
  return h('div', { class: 'numbers' },
    table(['', 'stable', 'canary'], [
      row('version', (a) => `v${a.version}`),
      row('rows', (a) => String(a.rows)),
      row('requests', (a) => String(a.requests)),
      row('errors', (a) => `${a.errors} (${percent(a.error_rate, 2)})`),
      row('NaN/Inf outputs', (a) => String(a.nan_outputs)),
      row('p95', (a) => ms(a.p95_ms)),
    ], { class: 'decision-numbers' }),
    h('p', {}, `window ${n.window_minutes} min · prediction PSI canary vs stable ${fixed(n.psi)} (warning ${fixed(n.psi_warning, 2)}, critical ${fixed(n.psi_critical, 2)}) · consecutive critical windows ${n.critical_streak} · clean windows ${n.clean_streak}`),
  )
}

const timeline = (entries: readonly HistoryEntry[]): HTMLElement =>
  h('ol', { class: 'timeline' }, ...entries.map((e) =>
    h('li', { class: `entry ${e.action}`, attrs: { 'data-action': e.action } },
      h('time', { attrs: { datetime: e.time } }, new Date(e.time).toLocaleString()),
      h('span', { class: 'action' }, e.action),
      h('span', { class: 'weights' }, e.from_weight === null && e.to_weight === null ? '' : `${e.from_weight ?? '–'}% → ${e.to_weight ?? '–'}%`),
      h('span', { class: 'actor' }, e.actor),
      h('span', { class: 'reason' }, e.reason),
    )))

/** The shadow version against each served version: rows compared, label agreement, mean and p99 |Δp|. */
const shadowPanel = (rollout: Rollout, shadow: Snapshot['shadow']): HTMLElement => {
  if (!rollout.shadow) return h('p', { class: 'shadow-comparison muted' }, 'No shadow version is set.')
  const promote = rollout.shadow.promote
  const rule = promote
    ? `A canary of v${rollout.shadow.version} starts at ${promote.canary_percent}% once, within ${promote.window_minutes} min, ${promote.min_rows} rows are compared with at least ${percent(promote.min_agreement, 2)} agreeing and at most ${percent(promote.max_error_rate, 2)} of shadow calls failing.`
    : 'The controller does not start a canary from this shadow (shadow.promote is off).'
  const head = h('p', {}, `Shadow v${rollout.shadow.version} gets ${rollout.shadow.percent}% of requests. ${rule}`)
  if (typeof shadow === 'string' || shadow === null || shadow === undefined) {
    return h('div', { class: 'shadow-comparison' }, head, h('p', { class: 'muted' }, `No comparison: ${shadow ?? 'the edge could not read its counts'}`))
  }
  if (shadow.length === 0) return h('div', { class: 'shadow-comparison' }, head, h('p', { class: 'muted' }, 'No rows compared yet.'))
  return h('div', { class: 'shadow-comparison' }, head,
    table(['served', 'shadow', 'rows compared', 'agreement', 'mean |Δp|', 'p99 |Δp|'], shadow.map((p) => [
      `v${p.version}`, `v${p.shadow_version}`, String(p.rows), p.agreement === null ? '–' : percent(p.agreement, 2), fixed(p.mean_abs_diff, 4), fixed(p.p99_abs_diff, 4),
    ]), { class: 'shadow-pairs' }),
  )
}

/** The ladder step, the numbers behind the last controller decision, the shadow comparison, and the decision history. */
export const canaryView = (snapshot: Snapshot): HTMLElement => {
  const { rollout } = snapshot.selected.state
  const share = canaryShare(rollout)
  const decided = snapshot.history.find((e) => e.numbers)
  const canary = rollout.arms.find((a) => a.variant === rollout.canary?.variant)
  const status = share === undefined
    ? 'No canary is running.'
    : `Canary v${canary!.version} at ${share}% of its pair${rollout.canary ? ` since ${new Date(rollout.canary.step_started_at).toLocaleTimeString()}` : ''}${rollout.canary?.paused_at !== undefined ? ` — paused since ${new Date(rollout.canary.paused_at).toLocaleTimeString()}: the controller leaves it until resumed` : ''}`
  const chart = h('div', { class: 'chart weight-chart' })
  const view = h('div', {},
    h('h2', {}, 'Ladder'),
    h('p', { class: 'canary-status' }, status),
    ladder(typeof snapshot.controller === 'string' ? DEFAULT_LADDER : snapshot.controller.steps, share),
    typeof snapshot.controller === 'string'
      ? h('p', { class: 'next-decision muted' }, `The controller's settings could not be read (${snapshot.controller}); its default ladder is shown.`)
      : h('p', { class: 'next-decision' }, nextDecision(rollout, snapshot.controller, snapshot.at)),
    h('h2', {}, 'Last decision'),
    decided
      ? h('div', { class: 'last-decision' }, h('p', {}, h('strong', {}, `${decided.action} ${decided.from_weight}% → ${decided.to_weight}%`), ` — ${decided.reason} (${new Date(decided.time).toLocaleString()})`), numbersOf(decided))
      : h('p', { class: 'muted' }, 'The controller has made no decision yet.'),
    h('h2', {}, 'Shadow comparison'),
    shadowPanel(rollout, snapshot.shadow),
    h('h2', {}, 'Canary weight over time'),
    chart,
    h('h2', {}, 'Decisions'),
    snapshot.history.length > 0 ? timeline(snapshot.history) : h('p', { class: 'muted' }, 'No decisions or changes recorded.'),
  )
  const weighted = snapshot.history.filter((e) => e.to_weight !== null).reverse()
  if (weighted.length > 0) stepChart(chart, weighted.map((e) => Date.parse(e.time) / 1000), weighted.map((e) => e.to_weight!), 'canary weight %', snapshot.at / 1000)
  return view
}
