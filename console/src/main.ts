import './style.css'
import { ApiError, createApi, type Api } from './api.ts'
import { byId } from './dom.ts'
import { DEFAULT_DRIFT_WINDOW, loadSnapshot, type DriftWindowLength, type Snapshot } from './snapshot.ts'
import { actionsView, type ActionContext } from './views/actions.ts'
import { backendView } from './views/backend.ts'
import { canaryView } from './views/canary.ts'
import { driftView } from './views/drift.ts'
import { modelsView } from './views/models.ts'

/** Seconds between refreshes. */
const REFRESH_S = 10

const VIEWS = {
  models: modelsView,
  canary: canaryView,
  drift: driftView,
  backend: backendView,
  actions: actionsView,
} as const satisfies Record<string, (snapshot: Snapshot, ctx: ActionContext) => HTMLElement>

type ViewName = keyof typeof VIEWS

const login = byId<HTMLFormElement>('login')
const keyInput = byId<HTMLInputElement>('key')
const loginError = byId('login-error')
const tabs = byId('tabs')
const picker = byId('model-picker')
const modelSelect = byId<HTMLSelectElement>('model')
const updated = byId('updated')
const forget = byId<HTMLButtonElement>('forget')
const view = byId('view')
const refreshError = byId('refresh-error')
const notice = byId('notice')
const dialog = byId<HTMLDialogElement>('confirm')

/** The session: the key lives in this closure's memory only, never in storage, a cookie or a URL. */
let api: Api | undefined
let snapshot: Snapshot | undefined
let active: ViewName = 'models'
let driftWindow: DriftWindowLength = DEFAULT_DRIFT_WINDOW
let timer: ReturnType<typeof setInterval> | undefined
let refreshing: Promise<void> | undefined
/** When the last refresh started: a failing one is retried on the interval, not every second. */
let attemptedAt = 0

const messageOf = (err: unknown) => (err instanceof ApiError ? err.explanation : err instanceof Error ? err.message : String(err))

const setNotice = (text: string, failed = false) => {
  notice.textContent = text
  notice.className = failed ? 'error' : 'ok'
  notice.hidden = false
}

/** The confirmation dialog; resolves with the operator's answer. */
const confirm = (title: string, note: string, text: string): Promise<boolean> =>
  new Promise((resolve) => {
    byId('confirm-title').textContent = title
    byId('confirm-note').textContent = note
    byId('confirm-text').textContent = text
    const ok = byId<HTMLButtonElement>('confirm-ok')
    const cancel = byId<HTMLButtonElement>('confirm-cancel')
    const done = (answer: boolean) => {
      ok.onclick = cancel.onclick = dialog.oncancel = null
      dialog.close()
      resolve(answer)
    }
    ok.onclick = () => done(true)
    cancel.onclick = () => done(false)
    dialog.oncancel = () => done(false)
    dialog.showModal()
  })

const showDriftWindows = (length: DriftWindowLength) => {
  driftWindow = length
  // A refresh already under way asked for the old length: read again once it is done.
  void refresh().then(() => {
    if (snapshot && snapshot.driftWindow !== driftWindow) void refresh()
  })
}

const context = (): ActionContext => ({ api: api!, refresh, confirm, notice: setNotice, showDriftWindows })

const render = () => {
  if (!snapshot) return
  view.dataset.view = active
  view.replaceChildren(VIEWS[active](snapshot, context()))
  for (const tab of tabs.querySelectorAll<HTMLButtonElement>('button')) tab.setAttribute('aria-selected', String(tab.dataset.tab === active))
  const names = snapshot.models.map((m) => m.description.name)
  if ([...modelSelect.options].map((o) => o.value).join() !== names.join()) {
    modelSelect.replaceChildren(...names.map((n) => new Option(n, n)))
  }
  modelSelect.value = snapshot.selected.description.name
}

const showUpdated = () => {
  if (snapshot) updated.textContent = `updated ${Math.max(0, Math.round((Date.now() - snapshot.at) / 1000))} s ago`
}

/** Back to the key form, the key dropped. */
const signOut = (message = '') => {
  api = undefined
  snapshot = undefined
  clearInterval(timer)
  timer = undefined
  for (const el of [tabs, picker, forget, view, refreshError, notice]) el.hidden = true
  updated.textContent = ''
  view.replaceChildren()
  loginError.textContent = message
  login.hidden = false
  keyInput.focus()
}

/** One refresh; a refused key ends the session, any other failure is shown and the last data kept. */
async function refresh(): Promise<void> {
  if (!api) return
  const session = api
  if (!refreshing) attemptedAt = Date.now()
  refreshing ??= loadSnapshot(session, snapshot?.selected.description.name ?? (modelSelect.value || undefined), driftWindow)
    .then((next) => {
      if (api !== session) return
      snapshot = next
      refreshError.hidden = true
      render()
      showUpdated()
    })
    .catch((err: unknown) => {
      if (api !== session) return
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return signOut(err.explanation)
      refreshError.textContent = `Refresh failed (showing the last data): ${messageOf(err)}`
      refreshError.hidden = false
    })
    .finally(() => {
      refreshing = undefined
    })
  return refreshing
}

login.addEventListener('submit', (event) => {
  event.preventDefault()
  const key = keyInput.value.trim()
  // Out of the DOM at once: nothing but this session's closure holds the key.
  keyInput.value = ''
  if (!key) return
  loginError.textContent = ''
  const session = createApi(key)
  loadSnapshot(session, undefined, driftWindow).then((first) => {
    api = session
    snapshot = first
    attemptedAt = first.at
    login.hidden = true
    for (const el of [tabs, picker, forget, view]) el.hidden = false
    render()
    showUpdated()
    timer = setInterval(() => {
      showUpdated()
      if (Date.now() - attemptedAt >= REFRESH_S * 1000) void refresh()
    }, 1000)
  }, (err: unknown) => {
    loginError.textContent = messageOf(err)
  })
})

tabs.addEventListener('click', (event) => {
  const tab = (event.target as HTMLElement).closest<HTMLButtonElement>('button[data-tab]')
  if (!tab) return
  active = tab.dataset.tab as ViewName
  render()
})

modelSelect.addEventListener('change', () => {
  if (snapshot) snapshot = { ...snapshot, selected: snapshot.models.find((m) => m.description.name === modelSelect.value) ?? snapshot.selected }
  void refresh()
})

forget.addEventListener('click', () => signOut())
