import { spawn } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { createCanaryRepository } from '../dev/canary-repository.ts'
import { SCENE_CONTROLLER, SCENE_VERSIONS, canaryRound, startCanary, type SceneEdge } from './scene.ts'

/**
 * `npm run console:screenshots`: one screenshot of each console view in docs/console/, taken on
 * `npm start`'s stack (its own ports, a scratch repository) after the demo's canary traffic has
 * stepped credit-risk v2 from 1% to 20% beside v1. The Actions view is shown with its rollback
 * confirmation open, not applied; the Drift view with the current window of one heatmap row hovered. Everything it starts is stopped; every wait is bounded.
 */
const ROOT = fileURLToPath(new URL('../', import.meta.url))
const OUT = fileURLToPath(new URL('../docs/console/', import.meta.url))
const BACKEND_PORT = process.env.BACKEND_PORT ?? '8200'
const EDGE_PORT = process.env.EDGE_PORT ?? '8987'
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
const STACK_START_MS = 120_000
const WAIT = { timeout: 30_000 }
const VIEWS = ['models', 'canary', 'drift', 'backend', 'actions'] as const

interface Stack {
  key: string
  consoleUrl: string
  stop(): Promise<void>
}

/** `npm start` as a child process group; resolves with the key and console URL its banner prints. */
const startStack = (repository: string): Promise<Stack> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
      cwd: ROOT,
      env: { ...process.env, BACKEND_PORT, EDGE_PORT, MODEL_REPOSITORY: repository, CONTROLLER_TICK_S: '0', ...SCENE_CONTROLLER },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise<void>((done) => child.once('exit', () => done()))
    const stop = () => (child.kill('SIGTERM'), exited)
    const timer = setTimeout(() => void stop().then(() => reject(new Error(`npm start was not up within ${STACK_START_MS / 1000} s`))), STACK_START_MS)
    let key: string | undefined
    createInterface({ input: child.stdout! }).on('line', (line) => {
      key ??= /local API key \(predict, admin\): (\S+)/.exec(line)?.[1]
      const consoleUrl = /^Operator console: (\S+)/.exec(line)?.[1]
      if (key && consoleUrl) {
        clearTimeout(timer)
        resolve({ key, consoleUrl, stop })
      }
    })
    void exited.then(() => reject(new Error('npm start exited before the stack was up')))
  })

const main = async () => {
  const repository = await createCanaryRepository(SCENE_VERSIONS)
  const stack = await startStack(repository.root).catch(async (err: unknown) => {
    await repository.remove()
    throw err
  })
  const edgeUrl = new URL(stack.consoleUrl).origin
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] })
  try {
    const scene: SceneEdge = { url: edgeUrl, key: stack.key, tick: async () => void (await (await fetch(`${edgeUrl}/__scheduled?cron=*+*+*+*+*`)).arrayBuffer()) }
    await startCanary(scene, 1, 2)
    for (const round of [1, 2]) await canaryRound(scene, 1, 2, round)
    await mkdir(OUT, { recursive: true })
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.setDefaultTimeout(WAIT.timeout)
    await page.goto(stack.consoleUrl)
    await page.fill('#key', stack.key)
    await page.click('#login button[type=submit]')
    await page.waitForSelector('#view[data-view=models] .model', WAIT)
    for (const view of VIEWS) {
      await page.click(`#tabs button[data-tab=${view}]`)
      await page.waitForSelector(`#view[data-view=${view}]`, WAIT)
      // The statistics behind one cell, as an operator hovering it sees them.
      if (view === 'drift') await page.hover('.heatmap tbody tr:first-child td.cell:last-child')
      if (view === 'actions') {
        await page.click('button[data-action=rollback]')
        await page.waitForSelector('#confirm[open]', WAIT)
      }
      await page.screenshot({ path: `${OUT}${view}.png`, fullPage: true })
      process.stdout.write(`docs/console/${view}.png\n`)
    }
  } finally {
    await browser.close()
    await stack.stop()
    await repository.remove()
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`console:screenshots failed: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
})
