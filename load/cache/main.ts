import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadAverage } from '../harness/cpu.ts'
import { fetchCatalog } from '../harness/catalog.ts'
import { percentile } from '../harness/percentile.ts'
import { cleanUp, installSignalHandlers } from '../harness/processes.ts'
import { ROOT } from '../harness/servers.ts'
import { startLocalStack } from '../harness/stack.ts'
import { formatTable } from '../harness/table.ts'
import { createZipfPayloads } from '../scenarios/index.js'

/**
 * `tsx load/cache/main.ts`: the edge prediction cache measured in one run on the local stack
 * (backend and the bundled worker in workerd on 127.0.0.1): the same Zipf-distributed stream of
 * one-row requests played with the model's cache off, on (empty at first), on again (the same
 * draws, entries in place) and off again, closed loop at a fixed concurrency. Backend calls are the answers not served by the edge (`X-Served-By`); latency is
 * the client's, through the edge. Prints the table and, with --report, writes it to load/reports/.
 */

const LIMITS = { requests: 20_000, concurrency: 32, distinct: 100_000 }
const REQUEST_TIMEOUT_MS = 10_000

interface Phase {
  name: string
  requests: number
  errors: number
  backendCalls: number
  hits: number
  latenciesMs: number[]
  elapsedS: number
}

const bounded = (name: keyof typeof LIMITS, raw: string): number => {
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1 || value > LIMITS[name]) throw new Error(`--${name} must be a whole number from 1 to ${LIMITS[name]}, got ${raw}`)
  return value
}

const putRollout = async (edgeUrl: string, adminKey: string, model: string, rollout: unknown): Promise<void> => {
  const url = `${edgeUrl}/v1/models/${encodeURIComponent(model)}/rollout`
  const headers = { 'x-api-key': adminKey, 'content-type': 'application/json' }
  const current = await fetch(url, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  const etag = current.headers.get('etag')
  await current.arrayBuffer()
  const res = await fetch(url, { method: 'PUT', headers: { ...headers, 'if-match': etag ?? '*' }, body: JSON.stringify(rollout), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  if (!res.ok) throw new Error(`PUT ${url}: ${res.status} ${await res.text()}`)
  await res.arrayBuffer()
}

/** Plays `requests` draws of the stream at `concurrency`, counting what the backend answered. */
const play = async (name: string, edgeUrl: string, apiKey: string, stream: ReturnType<typeof createZipfPayloads>, requests: number, concurrency: number): Promise<Phase> => {
  const phase: Phase = { name, requests, errors: 0, backendCalls: 0, hits: 0, latenciesMs: [], elapsedS: 0 }
  let sent = 0
  const started = performance.now()
  const worker = async () => {
    while (sent < requests) {
      sent++
      const payload = stream.next()
      const t0 = performance.now()
      try {
        const res = await fetch(edgeUrl + stream.path, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': apiKey, ...payload.headers },
          body: payload.body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        })
        await res.arrayBuffer()
        phase.latenciesMs.push(performance.now() - t0)
        if (res.status !== 200) phase.errors++
        if (res.headers.get('x-served-by') !== 'edge') phase.backendCalls++
        if (res.headers.get('x-cache') === 'HIT') phase.hits++
      } catch {
        phase.errors++
        phase.latenciesMs.push(performance.now() - t0)
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  phase.elapsedS = (performance.now() - started) / 1e3
  phase.latenciesMs.sort((a, b) => a - b)
  return phase
}

const table = (phases: readonly Phase[]): string => {
  const off = phases.find((p) => p.name === 'cache off')
  return formatTable(
    ['phase', 'requests', 'errors', 'backend calls', 'saved vs off', 'X-Cache HIT', 'p50 ms', 'p99 ms', 'req/s'],
    phases.map((p) => [
      p.name,
      String(p.requests),
      String(p.errors),
      String(p.backendCalls),
      off && off !== p ? `${(100 * (1 - p.backendCalls / off.backendCalls)).toFixed(1)} %` : '—',
      `${((100 * p.hits) / p.requests).toFixed(1)} %`,
      percentile(p.latenciesMs, 50).toFixed(2),
      percentile(p.latenciesMs, 99).toFixed(2),
      (p.requests / p.elapsedS).toFixed(0),
    ]),
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
}

export const runCacheLoad = async (argv: string[]): Promise<number> => {
  installSignalHandlers()
  const { values } = parseArgs({
    args: argv,
    options: {
      requests: { type: 'string', default: '4000' },
      distinct: { type: 'string', default: '2000' },
      exponent: { type: 'string', default: '1.1' },
      concurrency: { type: 'string', default: '8' },
      ttl: { type: 'string', default: '600' },
      seed: { type: 'string', default: '7' },
      report: { type: 'string' },
    },
  })
  const requests = bounded('requests', values.requests)
  const distinct = bounded('distinct', values.distinct)
  const concurrency = bounded('concurrency', values.concurrency)
  const exponent = Number(values.exponent)
  if (!(exponent > 0 && exponent <= 3)) throw new Error(`--exponent must be in (0, 3], got ${values.exponent}`)
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const loadBefore = loadAverage()
  const stack = await startLocalStack(log, { admin: true })
  try {
    const model = 'credit-risk'
    const catalog = await fetchCatalog(stack.edgeUrl, stack.apiKey, model)
    const version = Math.max(...(catalog.rollout.pinnable.length ? catalog.rollout.pinnable : [1]))
    const rollout = (cache: boolean) => ({ salt: 'zipf', arms: [{ variant: 'stable', version, weight: 100 }], ...(cache ? { cache: { ttl_seconds: Number(values.ttl) } } : {}) })
    const stream = () => createZipfPayloads({ catalog, distinct, exponent, seed: Number(values.seed) })
    // Warm-up (JIT, connections, the backend's sessions) on other draws, cache off: not measured.
    await putRollout(stack.edgeUrl, stack.adminKey!, model, rollout(false))
    await play('warm-up', stack.edgeUrl, stack.apiKey, createZipfPayloads({ catalog, distinct, exponent, seed: Number(values.seed) + 100 }), Math.min(500, requests), concurrency)
    const off = await play('cache off', stack.edgeUrl, stack.apiKey, stream(), requests, concurrency)
    await putRollout(stack.edgeUrl, stack.adminKey!, model, rollout(true))
    const on = await play('cache on', stack.edgeUrl, stack.apiKey, stream(), requests, concurrency)
    // The same draws again with the entries in place: what a cache that has been on for a while answers.
    const warm = await play('cache on, again', stack.edgeUrl, stack.apiKey, stream(), requests, concurrency)
    // And off once more: the machine is shared, so the first phase alone is not the baseline of the later ones.
    await putRollout(stack.edgeUrl, stack.adminKey!, model, rollout(false))
    const offAgain = await play('cache off, again', stack.edgeUrl, stack.apiKey, stream(), requests, concurrency)
    const settings = `${requests} one-row requests per phase drawn by Zipf (s = ${exponent}) from ${distinct} distinct requests (seed ${values.seed}), ${concurrency} connections closed loop, TTL ${values.ttl} s; model ${model} v${version}`
    const text = [
      table([off, on, warm, offAgain]),
      '',
      settings,
      `load average (1/5/15 min) at start ${loadBefore}, at end ${loadAverage()}; client, edge (workerd) and backend share this machine's cores on 127.0.0.1`,
    ].join('\n')
    process.stdout.write(`${text}\n`)
    if (values.report) {
      const path = join(ROOT, 'load/reports', values.report)
      await writeFile(path, `# Edge prediction cache under Zipf repeats (${new Date().toISOString().slice(0, 10)})\n\n\`tsx load/cache/main.ts ${argv.join(' ')}\`\n\n\`\`\`\n${text}\n\`\`\`\n`)
      log(`wrote ${path}`)
    }
    return [off, on, warm, offAgain].every((p) => p.errors === 0) ? 0 : 1
  } finally {
    await stack.stop()
    await cleanUp()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await runCacheLoad(process.argv.slice(2))
