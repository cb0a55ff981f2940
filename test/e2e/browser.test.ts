import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applicant } from '../backend/support/applicants.ts'
import { escapeHtml, servePage, type StaticPage } from '../edge/support/static-page.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import { startStack, type Stack } from '../support/stack.ts'

/**
 * A real browser against the real edge: headless Chromium loads a page from one loopback origin
 * that calls the worker (in workerd, on another origin) with an API key and shows the prediction;
 * the same page served from an origin the worker does not allow is stopped by CORS.
 */

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]
const WAIT = { timeout: 30_000 }

let stack: Stack | undefined
let worker: RunningWorker | undefined
let allowed: StaticPage | undefined
let blocked: StaticPage | undefined
let browser: BrowserContext | undefined
let scratch: string | undefined
let key: string

/** An applicant as a browser sends it: request features only; the entity's features come from the edge. */
const { account_age_months: _a, num_products: _n, ...instance } = applicant(3)

/**
 * The client page: a heading, and a script that POSTs one instance with `X-Api-Key` and a JSON
 * body (neither is CORS-safelisted, so the browser preflights), then writes the label into
 * `#result` or the error into `#error`, and marks `body[data-state]` when it is done either way.
 */
const clientPage = (title: string) => {
  const config = {
    endpoint: `${worker!.url}/v1/models/credit-risk/predict`,
    key,
    body: { instances: [instance], entity: { user_id: 'u-1' } },
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; margin: 2rem; color: #1b1f24; }
  h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
  .muted { color: #57606a; }
  output { display: block; margin-top: 1rem; font-size: 2rem; font-weight: 600; }
  #error { color: #b3261e; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p class="muted">POST ${escapeHtml(config.endpoint)} (user u-1)</p>
<output id="result"></output>
<p id="details" class="muted"></p>
<p id="error"></p>
<script type="application/json" id="config">${JSON.stringify(config).replace(/</g, '\\u003c')}</script>
<script>
  const config = JSON.parse(document.getElementById('config').textContent)
  const finish = (state) => { document.body.dataset.state = state }
  fetch(config.endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Api-Key': config.key },
    body: JSON.stringify(config.body),
  })
    .then(async (res) => {
      const body = await res.json()
      if (!res.ok) throw new Error('HTTP ' + res.status + ': ' + (body.title || ''))
      const [p] = body.predictions
      document.getElementById('result').textContent = p.label
      document.getElementById('details').textContent =
        'model ' + body.model + ' v' + body.version + ' (' + body.variant + '), p = ' + p.probability.toFixed(3)
      finish('done')
    })
    .catch((err) => {
      document.getElementById('error').textContent = err.name + ': ' + err.message
      finish('failed')
    })
</script>
</body>
</html>`
}

/** Loads a page and waits until its script has settled (by the DOM, not by a clock). */
const load = async (url: string): Promise<Page> => {
  const page = await browser!.newPage()
  await page.goto(url)
  await page.waitForSelector('body[data-state]', WAIT)
  return page
}

const text = async (page: Page, selector: string) => ((await page.locator(selector).textContent()) ?? '').trim()

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'edge-browser-'))
  allowed = await servePage(() => clientPage('Credit risk — allowed origin'))
  blocked = await servePage(() => clientPage('Credit risk — other origin'))
  stack = await startStack({
    keys: [{ name: 'browser', scopes: ['predict'], rate_limit_per_minute: 600 }],
    worker: { ALLOWED_ORIGINS: allowed.origin, MAX_INSTANCES: '64' },
  })
  worker = stack.worker
  key = stack.keys.browser!
  // A fresh profile of our own (Playwright refuses --user-data-dir in args; this is its way).
  browser = await chromium.launchPersistentContext(join(scratch, 'profile'), { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true })
})

afterAll(async () => {
  await browser?.close()
  await Promise.allSettled([allowed?.close(), blocked?.close()])
  await stack?.stop()
  if (scratch) await rm(scratch, { recursive: true, force: true })
})

describe('a browser calling the edge worker across origins', () => {
  it('serves the pages from two different loopback origins, neither of them the edge', () => {
    expect(allowed!.origin).not.toBe(blocked!.origin)
    expect(new URL(worker!.url).origin).not.toBe(allowed!.origin)
  })

  it('shows the prediction on a page from the allowed origin', async () => {
    const page = await load(allowed!.url)
    try {
      expect({ state: await page.locator('body').getAttribute('data-state'), error: await text(page, '#error') }).toEqual({ state: 'done', error: '' })
      expect(['low_risk', 'high_risk']).toContain(await text(page, '#result'))
      expect(await text(page, '#details')).toMatch(/^model credit-risk v2 \(stable\), p = 0\.\d{3}$/)
      expect(await page.title()).toBe('Credit risk — allowed origin')

      const shot = join(scratch!, 'allowed-page.png')
      await page.screenshot({ path: shot, fullPage: true })
      expect((await stat(shot)).size).toBeGreaterThan(0)
      const png = await readFile(shot)
      expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    } finally {
      await page.close()
    }
  })

  it('blocks the call by CORS on a page from an origin that is not allowed', async () => {
    const page = await browser!.newPage()
    try {
      // Chromium names the reason on the console: the preflight came back without an allow-origin.
      const refused = page.waitForEvent('console', { ...WAIT, predicate: (m) => m.type() === 'error' && /blocked by CORS policy/.test(m.text()) })
      await page.goto(blocked!.url)
      await page.waitForSelector('body[data-state]', WAIT)
      expect((await refused).text()).toMatch(/from origin '.*' has been blocked by CORS policy: Response to preflight request/)
      expect(await page.locator('body').getAttribute('data-state')).toBe('failed')
      // A CORS refusal reaches the script only as an opaque network TypeError.
      expect(await text(page, '#error')).toMatch(/^TypeError: /)
      expect(await text(page, '#result')).toBe('')
      expect(await text(page, '#details')).toBe('')
    } finally {
      await page.close()
    }
  })
})
