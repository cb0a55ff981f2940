import { ApiError, type Api, type RolloutState } from '../api.ts'
import { h, table } from '../dom.ts'
import { blocker, planFor, FIRST_STEP, type ActionName } from '../plan.ts'
import type { DriftWindowLength, Snapshot } from '../snapshot.ts'

export interface ActionContext {
  api: Api
  /** Reads everything again and redraws. */
  refresh(): Promise<void>
  /** Asks the operator; resolves true when they confirm. */
  confirm(title: string, note: string, text: string): Promise<boolean>
  /** Says how an action ended, where it stays visible across refreshes. */
  notice(text: string, failed?: boolean): void
  /** Reads the drift reports again over windows of this length, and keeps it for later refreshes. */
  showDriftWindows(length: DriftWindowLength): void
}

const LABELS: Record<ActionName, string> = {
  start: `Start canary at ${FIRST_STEP}%`,
  pause: 'Pause canary',
  resume: 'Resume canary',
  rollback: 'Roll back',
  promote: 'Promote',
}

const arms = (state: RolloutState) => state.rollout.arms.map((a) => `${a.variant} v${a.version} ${a.weight}%`).join(', ')

/**
 * Confirms and applies one action with If-Match. On a 412 the rollout changed under the
 * operator: the fresh state is read, the action planned on it again and confirmed again.
 */
const apply = async (ctx: ActionContext, model: string, initial: RolloutState, action: ActionName, version: number | undefined) => {
  let state = initial
  let note = ''
  for (;;) {
    const plan = planFor(state.rollout, action, version)
    if (typeof plan === 'string') return ctx.notice(`${note}${LABELS[action]} does not apply now: ${plan}.`, true)
    const request = plan.rollout ? `PUT /v1/models/${model}/rollout` : `POST /v1/models/${model}/rollout/${action}`
    const text = `${plan.summary}\n\n${request}\nIf-Match: ${state.etag}  (revision ${state.revision})`
    if (!(await ctx.confirm(`${LABELS[action]}: ${model}`, note, text))) return ctx.notice(`${LABELS[action]} cancelled.`)
    try {
      const stored = plan.rollout
        ? await ctx.api.putRollout(model, plan.rollout, state.etag)
        : await ctx.api.canary(model, action === 'resume' ? 'resume' : 'pause', state.etag)
      ctx.notice(`${LABELS[action]} applied: ${model} is at revision ${stored.revision} (${arms(stored)}).`)
      return await ctx.refresh()
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 412)) return ctx.notice(`${LABELS[action]} failed: ${err instanceof ApiError ? err.explanation : String(err)}`, true)
      state = await ctx.api.rollout(model)
      note = `The rollout changed since you looked: it is now at revision ${state.revision} (${arms(state)}${state.rollout.canary ? ', canary running' : ''}). `
    }
  }
}

/** Start, pause, resume, roll back and promote the selected model's canary, each confirmed first. */
export const actionsView = (snapshot: Snapshot, ctx: ActionContext): HTMLElement => {
  const { description, state } = snapshot.selected
  const model = description.name
  const baselineVersions = new Set(state.rollout.arms.filter((a) => a.weight > 0 && !a.variant.startsWith('canary')).map((a) => a.version))
  const candidates = description.versions.map(Number).filter((v) => !baselineVersions.has(v))
  const version = h('select', { attrs: { id: 'start-version', 'aria-label': 'version to start as a canary' } }, ...candidates.map((v) => h('option', { attrs: { value: String(v) } }, `v${v}`)))
  const button = (action: ActionName) => {
    const why = blocker(state.rollout, action) ?? (action === 'start' && candidates.length === 0 ? 'no other version is served' : undefined)
    const el = h('button', { title: why ?? '', attrs: { type: 'button', 'data-action': action } }, LABELS[action])
    el.disabled = why !== undefined
    el.addEventListener('click', () => void apply(ctx, model, state, action, action === 'start' ? Number(version.value) : undefined))
    return el
  }
  return h('div', {},
    h('h2', {}, `${model} — revision ${state.revision}`),
    table(['arm', 'version', 'weight'], state.rollout.arms.map((a) => [a.variant, `v${a.version}`, `${a.weight}%`]), { class: 'arms' }),
    h('p', { class: 'canary-state' }, !state.rollout.canary ? 'No canary is running.'
      : state.rollout.canary.paused_at !== undefined ? `Paused since ${new Date(state.rollout.canary.paused_at).toLocaleString()}: the controller leaves ${state.rollout.canary.variant} at its weight until resumed.`
      : `The controller drives ${state.rollout.canary.variant} against ${state.rollout.canary.baseline_variant}.`),
    h('div', { class: 'actions' },
      h('label', {}, 'version ', version), button('start'),
      button('pause'), button('resume'), button('rollback'), button('promote')),
    h('p', { class: 'muted' }, 'Each action is one request carrying If-Match: the revision shown above (a PUT of the rollout; pause and resume are their own POSTs, which keep the canary). If someone (or the controller) changed it since, the console shows the new state and asks again.'),
  )
}
