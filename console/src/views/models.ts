import { h, table } from '../dom.ts'
import type { Snapshot } from '../snapshot.ts'

/** Each model: served versions (ready on the backend) with their execution provider, the arms and weights, pins, shadow. */
export const modelsView = (snapshot: Snapshot): HTMLElement => {
  const providers = typeof snapshot.backend === 'string' ? new Map<string, string>() : new Map(snapshot.backend.versions.map((v) => [`${v.model}/${v.version}`, v.execution_provider ?? '?']))
  return h('div', {}, ...snapshot.models.map(({ description, state }) => {
    const served = new Set(description.versions.map(Number))
    const { rollout } = state
    const versions = h('ul', { class: 'chips' }, ...description.versions.map((v) => {
      const provider = providers.get(`${description.name}/${v}`)
      return h('li', { class: 'chip ready', attrs: { 'data-version': v } }, `v${v} ready${provider ? ` · ${provider}` : ''}`)
    }))
    const arms = table(['arm', 'version', 'weight', ''], rollout.arms.map((arm) => [
      arm.variant,
      `v${arm.version}${served.has(arm.version) ? '' : ' (not served)'}`,
      `${arm.weight}%`,
      h('span', { class: `weight ${arm.variant === rollout.canary?.variant ? 'canary' : 'stable'}`, attrs: { 'data-weight': String(arm.weight) } }),
    ]), { class: 'arms' })
    // The bar's width is set through the CSSOM, which a style-src of 'self' allows (an inline style attribute it would not).
    for (const bar of arms.querySelectorAll<HTMLElement>('.weight')) bar.style.width = `${bar.dataset.weight}%`
    const pinnable = description.rollout.pinnable.map((v) => `v${v}`).join(', ')
    return h('article', { class: 'model', attrs: { 'data-model': description.name } },
      h('h2', {}, description.name, h('span', { class: 'muted' }, ` revision ${state.revision} (${state.source})`)),
      h('h3', {}, 'Versions served'),
      versions,
      h('h3', {}, 'Arms'),
      arms,
      h('p', {}, h('strong', {}, 'Pinnable: '), pinnable || '–'),
      h('p', {}, h('strong', {}, 'Shadow: '), rollout.shadow ? `v${rollout.shadow.version} at ${rollout.shadow.percent}%` : 'none'),
      h('p', { class: 'canary-status' }, h('strong', {}, 'Canary: '), rollout.canary ? `${rollout.canary.variant} against ${rollout.canary.baseline_variant}, driven by the controller` : 'none running'),
    )
  }))
}
