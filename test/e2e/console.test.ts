import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page, type Request } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey } from '../../edge/stores/keys/api-key.ts'
import type { Rollout } from '../../edge/rollout/rollout.ts'
import { createCanaryRepository } from '../../dev/canary-repository.ts'
import { ROWS_PER_REQUEST, sendPinnedTraffic } from '../../dev/canary-traffic.ts'
import { SCENE_CONTROLLER, SCENE_MODEL, SCENE_VERSIONS, canaryRound, startCanary, type SceneEdge } from '../../console/scene.ts'
import type { DriftReport } from '../../backend/monitor/drift/report.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import { samplesOf, total } from '../edge/pipeline/request-metrics/samples.ts'
import { generateApplicants } from '../../tools/training/applicants.ts'
import { startStack, type Stack } from '../support/stack.ts'

/**
 * The operator console in headless Chromium against the bundled worker in workerd and the real
 * backend, with the demo's canary traffic: credit-risk v2 started as a 1% canary beside v1, one
 * round of traffic to both arms and a controller tick (1% → 5%). Every request each page makes is
 * recorded, and every console message.
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
const WAIT = { timeout: 30_000 }
const INFER_TOKEN = 'console-test-infer-token-0123456789'

let repository: Awaited<ReturnType<typeof createCanaryRepository>> | undefined
let stack: Stack | undefined
let worker: RunningWorker | undefined
let browser: BrowserContext | undefined
let scratch: string | undefined
let admin = ''
let predictOnly = ''
const requests: Request[] = []
/** Each page's console errors (and uncaught exceptions). */
const errors = new Map<Page, string[]>()

const edge = (path: string, init: RequestInit = {}) =>
  fetch(`${worker!.url}${path}`, { ...init, headers: { 'x-api-key': admin, 'content-type': 'application/json', ...init.headers } })

const rolloutState = async () => {
  const res = await edge(`/v1/models/${SCENE_MODEL}/rollout`)
  return { etag: res.headers.get('etag')!, ...((await res.json()) as { revision: number; rollout: Rollout }) }
}

/** A fresh page that records its requests and its console errors. */
const newPage = async (): Promise<Page> => {
  const page = await browser!.newPage()
  page.setDefaultTimeout(WAIT.timeout)
  const own: string[] = []
  errors.set(page, own)
  page.on('request', (r) => requests.push(r))
  page.on('console', (m) => {
    if (m.type() === 'error') own.push(m.text())
  })
  page.on('pageerror', (e) => own.push(`pageerror: ${e.message}`))
  return page
}

/** Opens the console and signs in with `key`. */
const open = async (key: string): Promise<Page> => {
  const page = await newPage()
  await page.goto(`${worker!.url}/console`)
  await page.fill('#key', key)
  await page.click('#login button[type=submit]')
  return page
}

const show = async (page: Page, view: string) => {
  await page.click(`#tabs button[data-tab=${view}]`)
  await page.waitForSelector(`#view[data-view=${view}]`, WAIT)
}

/** The scene's edge: the worker under test, its admin key, and its scheduled handler fired as the minute's Cron Trigger does. */
const scene = (): SceneEdge => ({
  url: worker!.url,
  key: admin,
  tick: async () => {
    const result = await (await worker!.mf.getWorker()).scheduled({ cron: '* * * * *', scheduledTime: new Date() })
    if (result.outcome !== 'ok') throw new Error(`the scheduled handler ended ${result.outcome}`)
  },
})

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'console-browser-'))
  repository = await createCanaryRepository(SCENE_VERSIONS)
  stack = await startStack({
    backend: { MODEL_REPOSITORY: repository.root, INFER_TOKEN },
    keys: [
      { name: 'ops', scopes: ['predict', 'admin'], rate_limit_per_minute: 1_000_000 },
      { name: 'app', scopes: ['predict'], rate_limit_per_minute: 1_000 },
    ],
    // A ladder other than the default: the Canary view must draw the one the edge runs.
    worker: { INFER_TOKEN, MAX_INSTANCES: String(ROWS_PER_REQUEST), ...SCENE_CONTROLLER, CONTROLLER_STEPS: '1,5,20,40,100' },
  })
  worker = stack.worker
  admin = stack.keys.ops!
  predictOnly = stack.keys.app!
  await startCanary(scene(), 1, 2)
  await canaryRound(scene(), 1, 2, 1)
  browser = await chromium.launchPersistentContext(join(scratch, 'profile'), { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true })
})

afterAll(async () => {
  await browser?.close()
  await stack?.stop()
  await repository?.remove()
  if (scratch) await rm(scratch, { recursive: true, force: true })
})

describe('the operator console', () => {
  it('is served with a CSP that allows only its own scripts, styles and API calls', async () => {
    const res = await fetch(`${worker!.url}/console`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/html/)
    const directives = new Map(res.headers.get('content-security-policy')!.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]))
    expect(directives.get('default-src')).toEqual(["'none'"])
    expect(directives.get('script-src')).toEqual(["'self'"])
    expect(directives.get('style-src')).toEqual(["'self'"])
    expect(directives.get('connect-src')).toEqual(["'self'"])
    expect(directives.get('frame-ancestors')).toEqual(["'none'"])
    const html = await res.text()
    // Nothing inline for the policy to have to allow.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
    expect(html).not.toMatch(/<style|\sstyle=/)
  })

  it('shows the models, the canary step with the numbers behind it, the drift heatmap and the backend, without a console error', async () => {
    const { rollout } = await rolloutState()
    expect(rollout.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)).toEqual(['stable:v1=95', 'canary:v2=5'])
    const page = await open(admin)
    try {
      await page.waitForSelector(`#view[data-view=models] .model[data-model="${SCENE_MODEL}"]`, WAIT)
      expect(await page.locator('.model .chips .chip').allTextContents()).toEqual(['v1 ready · cpu', 'v2 ready · cpu', 'v3 ready · cpu'])
      expect(await page.locator('.model .arms tbody tr').allInnerTexts()).toEqual([expect.stringMatching(/^stable\s+v1\s+95%/), expect.stringMatching(/^canary\s+v2\s+5%/)])
      expect(await page.textContent('#updated')).toMatch(/^updated \d+ s ago$/)

      await show(page, 'canary')
      const settings = (await (await edge('/v1/rollout/controller')).json()) as { steps: number[]; dwell_minutes: number; clean_windows: number }
      expect(settings).toMatchObject({ steps: [1, 5, 20, 40, 100], dwell_minutes: 0, clean_windows: 1 })
      expect(await page.locator('.ladder .step').allTextContents()).toEqual(['1%', '5%', '20%', '40%', '100%'])
      expect(await page.locator('.ladder .step.current').allTextContents()).toEqual(['5%'])
      expect(await page.textContent('.next-decision')).toBe('Dwell done: the controller decides at its next tick (every 60 s); a step needs 0 of 1 clean windows.')
      expect(await page.locator('.ladder .step.passed').allTextContents()).toEqual(['1%'])
      const [decision] = ((await (await edge(`/v1/models/${SCENE_MODEL}/rollout/history`)).json()) as { entries: Array<{ action: string; numbers?: { stable: { rows: number }; canary: { rows: number } } }> }).entries
      expect(decision.action).toBe('step')
      expect(await page.locator('.decision-numbers tbody tr').first().innerText()).toMatch(/^version\s+v1\s+v2$/)
      expect(await page.locator('.decision-numbers tbody tr').nth(1).innerText()).toBe(`rows\t${decision.numbers!.stable.rows}\t${decision.numbers!.canary.rows}`)
      expect(await page.locator('.timeline .entry').evaluateAll((els) => els.map((e) => e.getAttribute('data-action')))).toEqual(['step', 'manual'])
      // DOM geometry, not pixels (the chart's canvas antialiasing and fonts vary by machine): the
      // legend is labels only, without the page's table borders; the time axis spans the decisions
      // up to now, minutes, not the years uPlot gives a single point.
      const legend = page.locator('.weight-chart .u-legend')
      expect(await legend.innerText()).not.toContain('--')
      expect(await legend.locator('th, td').evaluateAll((els) => els.map((e) => (globalThis as unknown as { getComputedStyle(e: unknown): { borderTopWidth: string } }).getComputedStyle(e).borderTopWidth))).toEqual(['0px'])
      const axis = await page.locator('.weight-chart').evaluate((el) => ({ from: Number(el.getAttribute('data-x-from')), to: Number(el.getAttribute('data-x-to')) }))
      const decided = Date.parse(((await (await edge(`/v1/models/${SCENE_MODEL}/rollout/history`)).json()) as { entries: Array<{ time: string }> }).entries.at(-1)!.time) / 1000
      expect(axis.from).toBeLessThanOrEqual(decided)
      expect(axis.to).toBeGreaterThanOrEqual(decided)
      expect(axis.to - axis.from).toBeLessThanOrEqual(3_600)

      await show(page, 'drift')
      for (const version of [1, 2]) {
        // One report per version: its features' (and predictions') consecutive windows are the columns.
        const report = (await (await edge(`/v1/models/${SCENE_MODEL}/versions/${version}/drift`)).json()) as DriftReport
        const windows = report.prediction.windows.length
        expect(report.window.evaluated_windows).toBe(6)
        expect(windows).toBe(6)
        const heatmap = page.locator(`.heatmap[data-version="${version}"]`)
        expect(await heatmap.getAttribute('data-window-minutes')).toBe('15')
        expect(await heatmap.locator('td.cell').count()).toBe((report.features.length + 1) * windows)
        expect(await heatmap.locator('thead th[scope=col]').allTextContents()).toEqual([
          ...[75, 60, 45, 30, 15].map((ago) => expect.stringMatching(new RegExp(`^−${ago} min\\d{2}:\\d{2}`))),
          expect.stringMatching(/^now\d{2}:\d{2}/),
        ])
        const first = report.features[0]
        // Each cell is its window's verdict; the scene's traffic all fell in the current window, so the earlier ones say insufficient.
        const verdicts = await heatmap.locator(`td.cell[data-feature="${first.name}"]`).evaluateAll((els) => els.map((e) => e.getAttribute('data-verdict')))
        expect(verdicts).toEqual(first.windows.map((w) => w.verdict))
        expect(verdicts.slice(0, -1)).toEqual(Array(windows - 1).fill('insufficient'))
        expect(await heatmap.locator(`td.cell[data-feature="__prediction__"]`).evaluateAll((els) => els.map((e) => e.getAttribute('data-verdict')))).toEqual(report.prediction.windows.map((w) => w.verdict))
        const cell = heatmap.locator(`td.cell[data-feature="${first.name}"][data-window="${windows - 1}"]`)
        const title = await cell.getAttribute('title')
        expect(title).toContain(`PSI ${first.psi.toFixed(3)}`)
        expect(title).toContain(`rows ${first.rows}`)
        expect(title).toContain(`(now): ${first.verdict}`)
        await cell.hover()
        expect(await page.textContent('.hover-detail')).toMatch(new RegExp(`^${first.name} · \\d{2}:\\d{2}–\\d{2}:\\d{2} \\(now\\)`))
        // The current window's effect sizes beside its PSI, as the report gives them.
        const now = first.windows.at(-1)!
        const judged = now.verdict !== 'insufficient'
        const shown = (v: number | null | undefined, digits = 3) => (!judged || v === null || v === undefined ? '–' : v.toFixed(digits))
        expect(await page.locator(`.effect-sizes[data-version="${version}"] tbody tr`).first().locator('td').allInnerTexts()).toEqual([
          first.name, judged ? now.rows.toLocaleString('en-US') : `${now.rows.toLocaleString('en-US')} of 1,000 rows`, shown(now.psi), shown(now.smd), shown(now.z, 2), shown(now.wasserstein), shown(now.tvd), now.verdict,
        ])
      }
      // Realized and estimated quality per served version over the last hour to the last week, as /quality answers each window.
      expect(await page.locator('.quality-table thead th').allTextContents()).toEqual(['version', '', 'last 1h', 'last 6h', 'last 24h', 'last 168h'])
      const quality = (await (await edge(`/v1/models/${SCENE_MODEL}/quality?window=1h`)).json()) as { versions: Array<{ version: number; estimated: { accuracy: number | null; labels: number } | null }> }
      const v1 = quality.versions.find((v) => v.version === 1)!
      const estimatedRow = page.locator('.quality-table tbody tr').filter({ hasText: 'estimated' }).first()
      const shownEstimate = await estimatedRow.locator('td').nth(2).innerText()
      if (v1.estimated && v1.estimated.labels > 0) expect(shownEstimate).toMatch(new RegExp(`^acc ${v1.estimated.accuracy!.toFixed(3)} · log loss`))
      else expect(shownEstimate).toBe('–')
      expect(await page.locator('.version-drift .verdict').count()).toBe(2)
      expect(await page.locator('.prediction-chart canvas').count()).toBeGreaterThan(0)
      // Canary, stable and the baseline both versions share (the scene's v1 and v2 are the same network).
      expect(await page.locator('.prediction-chart .u-legend .u-series .u-label').allTextContents()).toEqual(expect.arrayContaining([
        expect.stringMatching(/^v1 \(stable 95%\)$/),
        expect.stringMatching(/^v2 \(canary 5%\)$/),
        'baseline (v1, v2)',
      ]))

      // 30 minute windows: the heatmap spans the last 3 hours, from one call per version.
      const before = requests.length
      await page.selectOption('#drift-window', '30m')
      await page.waitForSelector('.heatmap[data-version="2"][data-window-minutes="30"]', WAIT)
      // (An interval refresh may have read the 15 min windows meanwhile.)
      const calls = requests.slice(before).map((r) => new URL(r.url())).filter((u) => u.pathname.endsWith('/drift') && u.search === '?window=30m')
      expect(calls.map((u) => `${u.pathname} ${u.search}`).sort()).toEqual([1, 2].map((v) => `/v1/models/${SCENE_MODEL}/versions/${v}/drift ?window=30m`))
      expect(await page.locator('.heatmap[data-version="1"] thead th[scope=col]').first().textContent()).toMatch(/^−150 min/)

      await show(page, 'backend')
      // No Redis in this stack: the one replica BACKEND_URL reaches, said so, then the total.
      expect(await page.getAttribute('.replica-source', 'data-source')).toBe('backend_url')
      const replicaRows = await page.locator('table.replicas tbody tr').allTextContents()
      expect(replicaRows).toHaveLength(2)
      expect(replicaRows[0]).toMatch(/^the one BACKEND_URL reachesyes\d+/)
      expect(replicaRows[1]).toMatch(/^totalyes\d+/)
      const v2 = page.locator(`.backend-version[data-model="${SCENE_MODEL}"][data-version="2"]`)
      expect(await v2.locator('.provider').textContent()).toBe('cpu')
      expect(await v2.locator('.queue-depth').textContent()).toMatch(/^\d+ rows of \d+$/)
      expect(await v2.locator('.batch-reasons').textContent()).toMatch(/(full|delay|preferred): [\d,]+ batch/)
      expect(await page.textContent('.rejection-totals')).toMatch(/^429 .*: \d+ · 504 .*: \d+$/)
      expect(await v2.locator('.requests-by-status').textContent()).toMatch(/^HTTP 200: [\d,]+ requests( · HTTP \d{3}: [\d,]+ requests)*$/)
      expect(await v2.getAttribute('data-loaded')).toBe('true')
      expect(await v2.locator('.badge.unloaded').count()).toBe(0)
      expect(errors.get(page)).toEqual([])
    } finally {
      await page.close()
    }
  })

  it('pauses the canary on a confirmed click: ticks then change nothing; a resume continues the same step', async () => {
    const history = async () => ((await (await edge(`/v1/models/${SCENE_MODEL}/rollout/history`)).json()) as { entries: Array<{ action: string; time: string; actor: string; revision: number }> }).entries
    const before = await rolloutState()
    expect(before.rollout.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)).toEqual(['stable:v1=95', 'canary:v2=5'])
    const page = await open(admin)
    try {
      await show(page, 'actions')
      expect(await page.isDisabled('button[data-action=resume]')).toBe(true)
      await page.click('button[data-action=pause]')
      await page.waitForSelector('#confirm[open]', WAIT)
      expect(await page.textContent('#confirm-text')).toContain(`POST /v1/models/${SCENE_MODEL}/rollout/pause`)
      await page.click('#confirm-ok')
      await page.waitForSelector('#notice.ok', WAIT)
      const paused = await rolloutState()
      expect(paused.revision).toBe(before.revision + 1)
      expect(paused.rollout.arms).toEqual(before.rollout.arms)
      expect(paused.rollout.layout).toBe(before.rollout.layout)
      const { paused_at: pausedAt, ...kept } = paused.rollout.canary!
      expect(kept).toEqual(before.rollout.canary)
      const [pauseEntry] = await history()
      expect(pauseEntry).toMatchObject({ action: 'pause', revision: paused.revision })
      expect(Date.parse(pauseEntry.time)).toBe(pausedAt)
      await page.waitForSelector('button[data-action=resume]:not([disabled])', WAIT)
      expect(await page.isDisabled('button[data-action=pause]')).toBe(true)

      // A healthy round and a tick that would step it (the round before stepped 1 → 5): paused, nothing moves or is recorded.
      await canaryRound(scene(), 1, 2, 2)
      const still = await rolloutState()
      expect(still.revision).toBe(paused.revision)
      expect(still.rollout).toEqual(paused.rollout)
      expect((await history())[0].action).toBe('pause')

      await page.click('button[data-action=resume]')
      await page.waitForSelector('#confirm[open]', WAIT)
      await page.click('#confirm-ok')
      await page.locator('#notice.ok', { hasText: 'Resume canary applied' }).waitFor(WAIT)
      const resumed = await rolloutState()
      const [resumeEntry] = await history()
      expect(resumeEntry).toMatchObject({ action: 'resume', revision: resumed.revision })
      // The same step, its clock moved on by exactly the time paused; the streaks kept.
      expect(resumed.rollout.arms).toEqual(before.rollout.arms)
      expect(resumed.rollout.canary).toEqual({ ...before.rollout.canary, step_started_at: before.rollout.canary!.step_started_at + (Date.parse(resumeEntry.time) - pausedAt!) })
      expect(errors.get(page)).toEqual([])
    } finally {
      await page.close()
    }
    // Driven again: the next healthy round steps it on from 5%.
    await canaryRound(scene(), 1, 2, 3)
    const stepped = await rolloutState()
    expect(stepped.rollout.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)).toEqual(['stable:v1=80', 'canary:v2=20'])
    expect((await history())[0]).toMatchObject({ action: 'step', revision: stepped.revision })
  })

  it('rolls the canary back on a confirmed click, and the server holds the new weights', async () => {
    const page = await open(admin)
    try {
      await show(page, 'actions')
      await page.click('button[data-action=rollback]')
      await page.waitForSelector('#confirm[open]', WAIT)
      expect(await page.textContent('#confirm-text')).toContain('canary v2 20%  →  stable v1 100%, canary v2 0%')
      await page.click('#confirm-ok')
      await page.waitForSelector('#notice.ok', WAIT)
      expect(await page.textContent('#notice')).toMatch(/^Roll back applied: credit-risk is at revision \d+/)
      const { rollout } = await rolloutState()
      expect(rollout.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)).toEqual(['stable:v1=100', 'canary:v2=0'])
      expect(rollout.canary).toBeUndefined()
      expect(errors.get(page)).toEqual([])
    } finally {
      await page.close()
    }
  })

  it('shows the fresh state and asks again when the rollout changed under a confirmation (412)', async () => {
    const page = await open(admin)
    try {
      await show(page, 'actions')
      await page.selectOption('#start-version', '3')
      await page.click('button[data-action=start]')
      await page.waitForSelector('#confirm[open]', WAIT)
      // Someone else changes the rollout while the operator reads the confirmation.
      const before = await rolloutState()
      const { layout: _layout, ...changed } = { ...before.rollout, salt: 'changed-elsewhere' }
      const put = await edge(`/v1/models/${SCENE_MODEL}/rollout`, { method: 'PUT', headers: { 'if-match': before.etag }, body: JSON.stringify(changed) })
      expect(put.status).toBe(200)
      await page.click('#confirm-ok')
      await page.locator('#confirm-note', { hasText: 'changed since you looked' }).waitFor(WAIT)
      expect(await page.textContent('#confirm-note')).toContain(`now at revision ${before.revision + 1}`)
      expect(await page.isVisible('#confirm')).toBe(true)
      await page.click('#confirm-ok')
      await page.waitForSelector('#notice.ok', WAIT)
      const after = await rolloutState()
      expect(after.revision).toBe(before.revision + 2)
      expect(after.rollout.salt).toBe('changed-elsewhere')
      expect(after.rollout.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)).toEqual(['stable:v1=99', 'canary:v3=1'])
      expect(after.rollout.canary?.variant).toBe('canary')
    } finally {
      await page.close()
    }
  })

  it('shows the shadow comparison the edge counted, per served version', async () => {
    const before = await rolloutState()
    const shadowed = { salt: 'console-shadow', arms: [{ variant: 'stable', version: 1, weight: 100 }], shadow: { version: 3, percent: 100 } }
    expect((await edge(`/v1/models/${SCENE_MODEL}/rollout`, { method: 'PUT', headers: { 'if-match': before.etag }, body: JSON.stringify(shadowed) })).status).toBe(200)
    // Unpinned traffic, sticky by user: every request is also sent to the shadow (v3: every risk 1.5 logits higher).
    const { applicants } = generateApplicants(4 * ROWS_PER_REQUEST, 90_210)
    for (let at = 0; at < applicants.length; at += ROWS_PER_REQUEST) {
      const res = await edge(`/v1/models/${SCENE_MODEL}/predict`, { method: 'POST', body: JSON.stringify({ instances: applicants.slice(at, at + ROWS_PER_REQUEST), entity: { user_id: `console-shadow-${at}` } }) })
      expect(res.status).toBe(200)
      await res.arrayBuffer()
    }
    // The comparisons run after each answer: a bounded wait until the edge counted every row.
    const pair = { model: SCENE_MODEL, version: '1', shadow_version: '3' }
    let samples = samplesOf(await (await edge('/metrics')).text())
    for (let i = 0; i < 150 && total(samples, 'edge_infer_shadow_compared_rows_total', pair) < applicants.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      samples = samplesOf(await (await edge('/metrics')).text())
    }
    const rows = total(samples, 'edge_infer_shadow_compared_rows_total', pair)
    expect(rows).toBe(applicants.length)
    const agreeing = total(samples, 'edge_infer_shadow_agreeing_rows_total', pair)
    const mean = total(samples, 'edge_infer_shadow_probability_diff_sum', pair) / rows
    // A shifted network: some labels flip, every probability moves.
    expect(agreeing).toBeLessThan(rows)
    expect(mean).toBeGreaterThan(0.01)
    const page = await open(admin)
    try {
      await show(page, 'canary')
      const cells = page.locator('.shadow-pairs tbody tr').first().locator('td')
      await cells.first().waitFor(WAIT)
      const [served, shadow, compared, agreement, meanCell, p99Cell] = await cells.allTextContents()
      expect([served, shadow, compared]).toEqual(['v1', 'v3', String(rows)])
      expect(agreement).toBe(`${((agreeing / rows) * 100).toFixed(2)}%`)
      expect(Number(meanCell)).toBeCloseTo(mean, 4)
      expect(Number(p99Cell)).toBeGreaterThanOrEqual(Number(meanCell))
      expect(await page.locator('.shadow-pairs tbody tr').count()).toBe(1)
      expect(await page.textContent('.shadow-comparison')).toContain('Shadow v3 gets 100% of requests. The controller does not start a canary from this shadow')
      expect(errors.get(page)).toEqual([])
    } finally {
      await page.close()
    }
  })

  it('says how many rows a window too small for a verdict has, instead of its statistic; the hover detail sits by its cell', async () => {
    const before = await rolloutState()
    const arms = { salt: 'console-short', arms: [{ variant: 'stable', version: 1, weight: 90 }, { variant: 'b', version: 3, weight: 10 }] }
    expect((await edge(`/v1/models/${SCENE_MODEL}/rollout`, { method: 'PUT', headers: { 'if-match': before.etag }, body: JSON.stringify(arms) })).status).toBe(200)
    // Fewer rows than a verdict needs (with the shadow's earlier rows, still under 1,000).
    const statuses = await sendPinnedTraffic({ edgeUrl: worker!.url, key: admin, model: SCENE_MODEL, version: 3, rows: 4 * ROWS_PER_REQUEST, seed: 4_242 })
    expect([...statuses.keys()]).toEqual([200])
    const report = (await (await edge(`/v1/models/${SCENE_MODEL}/versions/3/drift`)).json()) as DriftReport
    const feature = report.features[0]
    const current = feature.windows.at(-1)!
    expect(current.verdict).toBe('insufficient')
    expect(current.rows).toBeGreaterThan(0)
    const page = await open(admin)
    try {
      await show(page, 'drift')
      const cell = page.locator(`.heatmap[data-version="3"] td.cell[data-feature="${feature.name}"][data-window="${feature.windows.length - 1}"]`)
      expect(await cell.locator('.rows-short').innerText()).toBe(`${current.rows.toLocaleString('en-US')} of 1,000 rows`)
      expect(await cell.getAttribute('title')).toContain(`not judged: ${current.rows.toLocaleString('en-US')} of 1,000 rows`)
      // The detail box opens just below the hovered cell (within a few pixels), not in a page corner.
      await cell.hover()
      const [at, box] = await Promise.all([cell.boundingBox(), page.locator('.hover-detail').boundingBox()])
      // Below the cell, or above it when the viewport has no room below: either way touching it.
      const gap = box!.y >= at!.y ? box!.y - (at!.y + at!.height) : at!.y - (box!.y + box!.height)
      expect(gap).toBeGreaterThanOrEqual(0)
      expect(gap).toBeLessThanOrEqual(8)
      expect(Math.abs(box!.x - at!.x)).toBeLessThanOrEqual(at!.width + 8)
      expect(errors.get(page)).toEqual([])
    } finally {
      await page.close()
    }
  })

  it('has no serious or critical axe-core violation in any view, and every action is reachable by keyboard with a visible focus', async () => {
    const axe = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
    const page = await open(admin)
    try {
      await page.waitForSelector('#view[data-view=models]', WAIT)
      // Evaluated through the DevTools protocol, which the page's CSP does not govern (an inline script it would refuse).
      await page.evaluate(axe)
      const violations = async (): Promise<string[]> => page.evaluate(`axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
        .then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id + ' ' + v.impact + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`)
      for (const view of ['models', 'canary', 'drift', 'backend', 'actions']) {
        await show(page, view)
        expect(await violations(), view).toEqual([])
      }
      // The heatmap's verdicts are not carried by colour alone: each judged cell has its mark and its word.
      await show(page, 'drift')
      // A judged window, once the backend has flushed its counts (the view refreshes every 10 s).
      await page.waitForSelector('td.cell:not([data-verdict=insufficient])', WAIT)
      const cells = await page.locator('td.cell').evaluateAll((els) => els.map((e) => ({ verdict: e.getAttribute('data-verdict'), mark: e.querySelector('.mark')?.textContent ?? '', word: e.querySelector('.sr-only')?.textContent ?? '' })))
      const marks: Record<string, string> = { ok: '✓', warning: '▲', critical: '✖', insufficient: '' }
      expect(cells.filter((c) => c.verdict !== 'insufficient').length).toBeGreaterThan(0)
      for (const c of cells) expect(c).toEqual({ verdict: c.verdict, mark: marks[c.verdict!], word: `${c.verdict}: ` })
      await show(page, 'actions')
      // Keyboard only: Tab reaches every enabled action button, each with a visible focus ring.
      const reached = new Set<string>()
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab')
        const focused = await page.evaluate(`(() => { const el = document.activeElement; const s = getComputedStyle(el); return { action: el.getAttribute('data-action'), outline: s.outlineStyle !== 'none' && s.outlineWidth !== '0px' } })()`) as { action: string | null; outline: boolean }
        if (focused.action) {
          expect(focused.outline, focused.action).toBe(true)
          reached.add(focused.action)
        }
      }
      const enabled = await page.locator('button[data-action]:not([disabled])').evaluateAll((els) => els.map((e) => e.getAttribute('data-action')!))
      expect(enabled.length).toBeGreaterThan(0)
      expect([...reached].sort()).toEqual([...enabled].sort())
    } finally {
      await page.close()
    }
  })

  it('says clearly when the key is wrong, or is not an admin key', async () => {
    const page = await open(generateApiKey('test'))
    try {
      await page.locator('#login-error', { hasText: /./ }).waitFor(WAIT)
      expect(await page.textContent('#login-error')).toMatch(/^The edge refused this key \(401 Unauthorized\)/)
      expect(await page.isVisible('#tabs')).toBe(false)
      await page.fill('#key', predictOnly)
      await page.click('#login button[type=submit]')
      await page.locator('#login-error', { hasText: '403' }).waitFor(WAIT)
      expect(await page.textContent('#login-error')).toMatch(/^This key may not use the admin API \(403 Forbidden\).*needs a key with the "admin" scope/)
    } finally {
      await page.close()
    }
  })

  it('does not run a script injected inline into the page', async () => {
    const page = await open(admin)
    try {
      await page.waitForSelector('#view[data-view=models] .model', WAIT)
      // Page code, as text: it runs in the browser, not under this file's (Node) types.
      const outcome: unknown = await page.evaluate(`new Promise((resolve) => {
        document.addEventListener('securitypolicyviolation', (e) => resolve({ ran: 'injected' in window, directive: e.effectiveDirective }), { once: true })
        const script = document.createElement('script')
        script.textContent = 'window.injected = true'
        document.body.append(script)
      })`)
      expect(outcome).toEqual({ ran: false, directive: 'script-src-elem' })
      expect(await page.evaluate(`'injected' in window`)).toBe(false)
    } finally {
      await page.close()
    }
  })

  it('never puts the key in a URL, storage or a cookie: it goes in the X-Api-Key header of its own origin only', async () => {
    const urls = requests.map((r) => r.url())
    expect(urls.length).toBeGreaterThan(20)
    for (const key of [admin, predictOnly]) {
      for (const url of urls) expect(url.includes(key) || url.includes(encodeURIComponent(key))).toBe(false)
    }
    const origin = new URL(worker!.url).origin
    expect(urls.every((u) => new URL(u).origin === origin)).toBe(true)
    const api = requests.filter((r) => new URL(r.url()).pathname.startsWith('/v1/'))
    expect(api.length).toBeGreaterThan(10)
    expect(new Set(api.map((r) => r.headers()['x-api-key'])).has(admin)).toBe(true)
    expect(requests.filter((r) => !new URL(r.url()).pathname.startsWith('/v1/')).every((r) => r.headers()['x-api-key'] === undefined)).toBe(true)
    const page = await open(admin)
    try {
      await page.waitForSelector('#view[data-view=models] .model', WAIT)
      const kept: unknown = await page.evaluate(`({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie, input: document.getElementById('key').value })`)
      expect(kept).toEqual({ local: 0, session: 0, cookie: '', input: '' })
      expect(await browser!.cookies()).toEqual([])
    } finally {
      await page.close()
    }
  })
})
