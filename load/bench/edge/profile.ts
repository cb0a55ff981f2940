import { readFile, writeFile } from 'node:fs/promises'
import { SourceMap, type SourceMapPayload, type SourceMapping } from 'node:module'
import { runAutocannon } from '../../harness/autocannon.ts'
import { positiveInt } from '../../harness/env.ts'
import { cleanUp, installSignalHandlers } from '../../harness/processes.ts'
import { bundleWorker } from './bundle.ts'
import { startBenchBackend, startWorker } from './versus-peer.ts'
import { PREDICT_PATH, WARM_USER, predictBody } from './workload.ts'

/**
 * A CPU profile of the edge worker inside workerd under load, taken with workerd's own V8
 * inspector (Miniflare's inspectorPort): `npx tsx load/bench/edge/profile.ts [out.cpuprofile]`.
 * Prints self time by function and by source module; the .cpuprofile opens in Chrome DevTools.
 * Env: PROFILE_DURATION_S (8), BENCH_CONNECTIONS (16), PROFILE_BINDINGS (JSON added to the worker's),
 * PROFILE_WORKER (`peer`: the bench's minimal peer worker instead of the edge).
 */
interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }; hitCount?: number; children?: number[]; positionTicks?: Array<{ line: number; ticks: number }> }
interface Profile { nodes: ProfileNode[]; startTime: number; endTime: number; samples?: number[]; timeDeltas?: number[] }

const INSPECTOR_PORT = 9_329

/** One CDP session over the inspector's WebSocket: send a method, await its result. */
const connect = async (url: string) => {
  const socket = new WebSocket(url)
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true })
    socket.addEventListener('error', reject, { once: true })
  })
  let next = 1
  const waiting = new Map<number, (result: unknown) => void>()
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown }
    if (message.id !== undefined) waiting.get(message.id)?.(message.result)
  })
  return {
    send: <T>(method: string, params: Record<string, unknown> = {}): Promise<T> => {
      const id = next++
      socket.send(JSON.stringify({ id, method, params }))
      return new Promise<T>((resolve) => waiting.set(id, resolve as (r: unknown) => void))
    },
    close: () => socket.close(),
  }
}

/** Self time per key, in ms, from the sample counts (each sample is one interval of the profile). */
const selfTime = (profile: Profile, keyOf: (n: ProfileNode) => string): Array<[string, number]> => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const totals = new Map<string, number>()
  const samples = profile.samples ?? []
  const deltas = profile.timeDeltas ?? []
  samples.forEach((id, i) => {
    const node = byId.get(id)
    if (node) totals.set(keyOf(node), (totals.get(keyOf(node)) ?? 0) + (deltas[i] ?? 0) / 1000)
  })
  return [...totals].sort((a, b) => b[1] - a[1])
}

/** Self time per original source line, from each function's line ticks (a line of the unminified bundle each). */
const lineTime = (profile: Profile, placeOf: (n: ProfileNode, generatedLine: number) => { file: string; line: number } | undefined): Array<[string, number]> => {
  const samples = profile.samples?.length ?? 0
  const msPerTick = samples > 0 ? (profile.endTime - profile.startTime) / 1000 / samples : 0
  const totals = new Map<string, number>()
  for (const node of profile.nodes) {
    for (const { line, ticks } of node.positionTicks ?? []) {
      const place = placeOf(node, line - 1)
      if (place === undefined) continue
      const key = `${place.file}:${place.line}`
      totals.set(key, (totals.get(key) ?? 0) + ticks * msPerTick)
    }
  }
  return [...totals].sort((a, b) => b[1] - a[1])
}

const main = async (): Promise<void> => {
  installSignalHandlers()
  try {
    const durationS = positiveInt('PROFILE_DURATION_S', 8)
    const backend = await startBenchBackend()
    const extra = JSON.parse(process.env.PROFILE_BINDINGS ?? '{}') as Record<string, string>
    const peer = process.env.PROFILE_WORKER === 'peer'
    const bindings = { ...(peer ? backend.bindings.peer : backend.bindings.edge), ...extra }
    // Unminified, so that the profile's line ticks fall on single statements; names and places come from the source map.
    const bundle = await bundleWorker(peer ? 'load/bench/edge/peer/worker.ts' : undefined, undefined, { minify: false })
    const map = new SourceMap(JSON.parse(await readFile(`${bundle}.map`, 'utf8')) as SourceMapPayload)
    const { server: edge } = await startWorker('the worker', bundle, bindings, { INSPECTOR_PORT: String(INSPECTOR_PORT) })
    const options = { url: `${edge.url}${PREDICT_PATH}`, body: predictBody(1, WARM_USER), headers: { authorization: `Bearer ${backend.key}` }, connections: positiveInt('BENCH_CONNECTIONS', 16) }
    await runAutocannon({ ...options, durationS: 2 })
    const targets = (await (await fetch(`http://127.0.0.1:${INSPECTOR_PORT}/json`)).json()) as Array<{ id: string; webSocketDebuggerUrl?: string }>
    const target = targets.find((t) => t.id.includes('core:user:'))
    if (!target?.webSocketDebuggerUrl) throw new Error(`no user worker among the inspector's targets: ${JSON.stringify(targets)}`)
    const cdp = await connect(target.webSocketDebuggerUrl)
    await cdp.send('Profiler.enable')
    await cdp.send('Profiler.setSamplingInterval', { interval: 100 })
    await cdp.send('Profiler.start')
    const load = await runAutocannon({ ...options, durationS })
    const { profile } = await cdp.send<{ profile: Profile }>('Profiler.stop')
    cdp.close()
    const out = process.argv[2] ?? '/tmp/edge.cpuprofile'
    await writeFile(out, JSON.stringify(profile))
    const totalMs = (profile.endTime - profile.startTime) / 1000
    const line = ([name, ms]: [string, number]) => `${ms.toFixed(0).padStart(7)} ms  ${((100 * ms) / totalMs).toFixed(1).padStart(5)}%  ${name}`
    const origin = ({ callFrame: f }: ProfileNode, generatedLine?: number) => {
      const [at, column] = generatedLine === undefined ? [f.lineNumber, f.columnNumber] : [generatedLine, Number.MAX_SAFE_INTEGER]
      const entry = f.url.endsWith('worker.js') ? (map.findEntry(at, column) as Partial<SourceMapping>) : undefined
      return entry?.originalSource !== undefined && entry.originalLine !== undefined ? { file: entry.originalSource.replace(/^.*?\/(node_modules|edge|shared)\//, '$1/'), line: entry.originalLine + 1, name: (entry as { name?: string }).name ?? f.functionName } : undefined
    }
    const moduleOf = (n: ProfileNode) => origin(n)?.file ?? (n.callFrame.url ? n.callFrame.url.replace(/^.*\//, '') : `(${n.callFrame.functionName || 'native'})`)
    const functionOf = (n: ProfileNode) => {
      const at = origin(n)
      return at ? `${at.name || '(anonymous)'} ${at.file}:${at.line}` : `${n.callFrame.functionName || '(anonymous)'} ${moduleOf(n)}`
    }
    process.stdout.write([
      `${load.completed} predicts in ${durationS} s (${load.reqPerSec.toFixed(0)} req/s); profile ${totalMs.toFixed(0)} ms, written to ${out}`,
      'self time by function:',
      ...selfTime(profile, functionOf).slice(0, 40).map(line),
      'self time by module:',
      ...selfTime(profile, moduleOf).slice(0, 25).map(line),
      'self time by source line:',
      ...lineTime(profile, (n, generatedLine) => origin(n, generatedLine)).slice(0, 40).map(line),
    ].join('\n') + '\n')
  } finally {
    await cleanUp()
  }
}

await main()
