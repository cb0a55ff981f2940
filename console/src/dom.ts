type Child = Node | string | null | undefined | false

interface Props {
  class?: string
  title?: string
  /** Attributes besides class and title (data-*, aria-*, type...). */
  attrs?: Record<string, string>
}

/** An element with its class, title, attributes and children; text is always text, never markup. */
export const h = <K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] => {
  const el = document.createElement(tag)
  if (props.class) el.className = props.class
  if (props.title) el.title = props.title
  for (const [name, value] of Object.entries(props.attrs ?? {})) el.setAttribute(name, value)
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child)
  return el
}

/** A table with one row per entry, under a header row when `head` names the columns. */
export const table = (head: readonly string[], rows: readonly Child[][], props: Props = {}): HTMLTableElement =>
  h('table', props, head.length > 0 && h('thead', {}, h('tr', {}, ...head.map((c) => h('th', {}, c)))), h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c))))))

export const byId = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const el = document.getElementById(id)
  if (!el) throw new Error(`the page has no #${id}`)
  return el as T
}

export const percent = (share: number, digits = 1) => `${(share * 100).toFixed(digits)}%`
export const ms = (value: number | null | undefined) => (value === null || value === undefined ? '–' : `${value.toFixed(1)} ms`)
export const fixed = (value: number | null | undefined, digits = 3) => (value === null || value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits))
