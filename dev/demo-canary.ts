import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { HistoryEntry } from '../edge/stores/history/history-store.ts'
import type { Rollout } from '../edge/rollout/rollout.ts'
import { generateApplicants } from '../tools/training/applicants.ts'
import { createCanaryRepository } from './canary-repository.ts'
import { runIfMain } from '../tools/cli/direct.ts'
import { type LabelledAnswer, canaryRollout, sendFeedback, sendPinnedTraffic } from './canary-traffic.ts'

/**
 * `edge-infer demo canary` (`npm run demo:canary`): a rollout and three rollbacks as they happen. Runs `npm start` (the same
 * launcher) on its own ports against a scratch repository of credit-risk versions — 1 stable,
 * 2 the same network (healthy), 3 scoring everyone 1.5 logits riskier, 4 emitting NaN, 5 ranking
 * the riskiest half upside down with the very prediction histogram of 2 (label-flipped) — then
 * for each canary sends steady synthetic traffic through the edge to both arms, fires the
 * controller's Cron Trigger after each round, and prints every decision the controller makes.
 * The label-flipped canary's traffic gets its ground truth back as feedback (the generator's
 * labels), so realized quality catches what drift cannot.
 * The NaN canary gets users as the rollout splits them (not pinned): its failed calls are
 * answered from stable, and the demo counts the errors clients saw and the fallbacks.
 *
 * The controller runs with no dwell time and one clean window per step so the demo takes a
 * minute, not an hour; everything else (thresholds, 3 critical windows, NaN rule) is as deployed.
 */
const ROOT = fileURLToPath(new URL('../', import.meta.url))
const BACKEND_PORT = process.env.BACKEND_PORT ?? '8100'
const EDGE_PORT = process.env.EDGE_PORT ?? '8887'
const EDGE_URL = `http://127.0.0.1:${EDGE_PORT}`
const MODEL = 'credit-risk'
const ROWS_PER_ROUND = 1_100
/** Users per round of unpinned traffic, each its own sticky key, so that 1% of them is a few users. */
const USERS_PER_ROUND = 550
const MAX_ROUNDS = 8

const say = (line: string) => process.stdout.write(`${line}\n`)

interface Stack {
  key: string
  stop(): Promise<void>
}

/** `npm start` as a child; resolves with the local admin key once it printed its banner. */
const startStack = (repository: string): Promise<Stack> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        BACKEND_PORT, EDGE_PORT, MODEL_REPOSITORY: repository,
        CONTROLLER_DWELL_MINUTES: '0', CONTROLLER_CLEAN_WINDOWS: '1', CONTROLLER_MIN_REQUESTS: '10', CONTROLLER_MIN_LABELS: '500', FEEDBACK_MODELS: MODEL,
        // Labels are sent with each round's traffic, or never: no step waits for late ones.
        CONTROLLER_LABEL_MAX_DELAY_MINUTES: '0',
        // This script fires every tick itself, right after each round of traffic.
        CONTROLLER_TICK_S: '0',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise<void>((done) => child.once('exit', () => done()))
    let key: string | undefined
    createInterface({ input: child.stdout! }).on('line', (line) => {
      key ??= /^local API key \(.*\): (\S+)$/.exec(line)?.[1]
      if (key && line.startsWith('rollout controller:')) resolve({ key, stop: () => (child.kill('SIGTERM'), exited) })
    })
    void exited.then(() => reject(new Error('npm start exited before the stack was up')))
  })

/** `--keep`: leave the stack and its console up at the end, until Ctrl-C. */
export interface DemoCanaryOptions {
  keep?: boolean
}

/** Plays the demo; with `keep`, then waits for SIGINT or SIGTERM before it stops the stack. */
export const runDemoCanary = async ({ keep = false }: DemoCanaryOptions = {}): Promise<void> => {
  const repository = await createCanaryRepository({ 1: 'same', 2: 'same', 3: { shiftLogit: 1.5 }, 4: 'nan', 5: { labelFlip: 0.5 } })
  say(`demo:canary — starting npm start on ${EDGE_URL} with a scratch repository (${repository.root})`)
  const stack = await startStack(repository.root)
  let seed = 90_000
  const edge = (path: string, init: RequestInit = {}) =>
    fetch(`${EDGE_URL}${path}`, { ...init, headers: { 'x-api-key': stack.key, 'content-type': 'application/json', ...init.headers } })

  const traffic = (version: number) => sendPinnedTraffic({ edgeUrl: EDGE_URL, key: stack.key, model: MODEL, version, rows: ROWS_PER_ROUND, seed: seed++ })
  const rollout = async () => ((await (await edge(`/v1/models/${MODEL}/rollout`)).json()) as { rollout: Rollout }).rollout
  const history = async () => ((await (await edge(`/v1/models/${MODEL}/rollout/history?limit=1`)).json()) as { entries: HistoryEntry[] }).entries

  /** One request per user, routed by the rollout: how many got each status, and how many were answered by stable after the canary failed. */
  const users = async () => {
    const rows = Math.ceil(ROWS_PER_ROUND / USERS_PER_ROUND)
    const round = seed++
    const { applicants } = generateApplicants(USERS_PER_ROUND * rows, round)
    const statuses = new Map<number, number>()
    let fallbacks = 0
    for (let u = 0; u < USERS_PER_ROUND; u++) {
      const res = await edge(`/v1/models/${MODEL}/predict`, {
        method: 'POST',
        body: JSON.stringify({ instances: applicants.slice(u * rows, (u + 1) * rows), entity: { user_id: `demo-user-${round}-${u}` } }),
      })
      await res.arrayBuffer()
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      if (res.headers.get('x-canary-fallback') === '1') fallbacks++
    }
    const errors = [...statuses].filter(([code]) => code >= 400).reduce((sum, [, n]) => sum + n, 0)
    return `users ${[...statuses].map(([code, n]) => `${n}×${code}`).join(' ')} (${errors} client-visible errors, ${fallbacks} answered by stable after a canary failure)`
  }

  /** Pinned traffic to both arms, every answered row then labelled with its true label through /v1/feedback. */
  const labelled = async (stable: number, candidate: number) => {
    const counts: string[] = []
    for (const version of [stable, candidate]) {
      const answers: LabelledAnswer[] = []
      await sendPinnedTraffic({ edgeUrl: EDGE_URL, key: stack.key, model: MODEL, version, rows: ROWS_PER_ROUND, seed: seed++, answered: (a) => answers.push(a) })
      const results = await sendFeedback(EDGE_URL, stack.key, answers, ['low_risk', 'high_risk'])
      counts.push(Object.entries(results).map(([result, n]) => `${n} ${result}`).join(', '))
    }
    return `traffic and labels: stable ${counts[0]}, canary ${counts[1]}`
  }

  const pinned = async (stable: number, candidate: number) => {
    const statuses = [await traffic(stable), await traffic(candidate)].map((s) => [...s].map(([code, n]) => `${n}×${code}`).join(' '))
    return `traffic stable ${statuses[0]}, canary ${statuses[1]}`
  }

  const act = async (title: string, stable: number, candidate: number, send: () => Promise<string> = () => pinned(stable, candidate)) => {
    say(`\n== ${title}: canary v${candidate} at 1% beside stable v${stable} ==`)
    const current = await edge(`/v1/models/${MODEL}/rollout`)
    const put = await edge(`/v1/models/${MODEL}/rollout`, {
      method: 'PUT',
      headers: { 'if-match': current.headers.get('etag')! },
      body: JSON.stringify(canaryRollout(stable, candidate)),
    })
    if (put.status !== 200) throw new Error(`starting the canary answered ${put.status}: ${await put.text()}`)
    let last: string | undefined
    for (let round = 1; round <= MAX_ROUNDS && (await rollout()).canary; round++) {
      const sent = await send()
      await (await fetch(`${EDGE_URL}/__scheduled?cron=*+*+*+*+*`)).arrayBuffer()
      const [entry] = await history()
      const n = entry.numbers
      const accuracy = (arm: NonNullable<typeof n>['stable']) => (arm.realized?.accuracy == null ? '-' : arm.realized.accuracy.toFixed(3))
      const realized = n?.canary.realized?.labels ? `, realized accuracy ${accuracy(n.stable)}/${accuracy(n.canary)} on ${n.stable.realized!.labels}/${n.canary.realized.labels} labels` : ''
      const numbers = n ? `psi ${n.psi === null ? '-' : n.psi.toFixed(3)} (critical ${n.psi_critical.toFixed(2)}), NaN ${n.canary.nan_outputs}, rows ${n.stable.rows}/${n.canary.rows}${realized}` : ''
      const line = entry.id === last ? 'no new decision' : `${entry.action.padEnd(8)} ${entry.from_weight}% → ${entry.to_weight}%  ${entry.reason}  [${numbers}]`
      last = entry.id
      say(`round ${round}: ${sent} → ${line}`)
    }
    say(`weights now: ${(await rollout()).arms.map((a) => `${a.variant} v${a.version} ${a.weight}%`).join(', ')}`)
  }

  try {
    await act('a healthy canary', 1, 2)
    await act('a canary that scores everyone riskier', 2, 3)
    await act('a canary trained on flipped labels (its prediction histogram is stable\'s), labelled by feedback', 2, 5, () => labelled(2, 5))
    await act('a canary that emits NaN, users routed by the rollout', 2, 4, users)
    if (keep) {
      say([
        '',
        `The stack stays up: edge ${EDGE_URL}, local API key ${stack.key}`,
        `  the whole history: curl -s ${EDGE_URL}/v1/models/${MODEL}/rollout/history -H 'x-api-key: ${stack.key}'`,
        `  operator console:  ${EDGE_URL}/console  (paste the key above)`,
        'Ctrl-C (or kill -TERM this process) stops it and removes the scratch repository.',
      ].join('\n'))
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve)
        process.once('SIGTERM', resolve)
      })
    } else say(`\nThe stack is stopped. \`npm run demo:canary -- --keep\` leaves it up at the end, with its key, to look around (history, console).`)
  } finally {
    await stack.stop()
    await repository.remove()
  }
}

// Run as a file (`tsx dev/demo-canary.ts …`): the same as `edge-infer demo canary …`.
runIfMain(import.meta.url, ['demo', 'canary'])
