import { execFileSync } from 'node:child_process'
import { resolve } from 'node:path'

/** A Node binary that benchmark rows run on. */
export interface Runtime {
  bin: string
  /** What the binary reports as `process.version` (`v24.21.0`): the rows' label. */
  version: string
}

/**
 * The binaries named by BENCH_NODES (comma-separated; unset or empty: `fallback`, the Node running
 * the benchmark). A path with a slash resolves against `cwd`, so children started in another
 * folder find the same binary; a bare name is left for PATH.
 */
export const parseNodeList = (raw: string | undefined, fallback: string, cwd: string): string[] => {
  const bins = (raw ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => (s.includes('/') ? resolve(cwd, s) : s))
  return bins.length > 0 ? bins : [fallback]
}

const versionOf = (bin: string): string => {
  try {
    return execFileSync(bin, ['-p', 'process.version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
  } catch (err) {
    throw new Error(`BENCH_NODES: ${bin} did not run as Node: ${err instanceof Error ? err.message : String(err)}`)
  }
}

/**
 * BENCH_NODES, shared by the benchmarks: every row that Node runs is measured once per binary,
 * in turns within one run, so runtimes are compared on the same machine state. Rows are told
 * apart by version, so a version named twice (the same binary, or two builds of it) is refused.
 */
export const benchRuntimes = (): Runtime[] => {
  const runtimes = parseNodeList(process.env.BENCH_NODES, process.execPath, process.cwd()).map((bin) => ({ bin, version: versionOf(bin) }))
  for (const [i, r] of runtimes.entries()) {
    const earlier = runtimes.slice(0, i).find((e) => e.version === r.version)
    if (earlier) throw new Error(`BENCH_NODES: ${r.bin} and ${earlier.bin} are both ${r.version}`)
  }
  return runtimes
}

/** One measurement per runtime, one after another: two at once would share the two cores. */
export const inTurn = async <T>(runtimes: readonly Runtime[], measure: (runtime: Runtime, index: number) => Promise<T>): Promise<T[]> => {
  const results: T[] = []
  for (const [i, runtime] of runtimes.entries()) results.push(await measure(runtime, i))
  return results
}

/** The legend line for the `node` column and the ratio rows (load/harness/table.ts formatRuntimeTable). */
export const runtimesLegend = (runtimes: readonly Runtime[]): string => {
  const which = `node: the Node that ran the row (BENCH_NODES=${runtimes.map((r) => r.bin).join(',')} → ${runtimes.map((r) => r.version).join(', ')}).`
  if (runtimes.length < 2) return which
  return `${which}\n"A ÷ B" rows: A's value over B's for the same row of this run (req/s, rows/s: above 1 is A faster; p50, p99, mean, CPU µs/req: below 1 is A faster).`
}
