import { cpus, loadavg } from 'node:os'
import { cleanUp, installSignalHandlers, interrupted } from '../../../harness/processes.ts'
import { bundleWorker } from '../bundle.ts'
import { formatVersusPeer, measureVersusPeer, versusPeerSettings } from '../versus-peer.ts'

/**
 * The edge against the minimal peer worker alone (the section of `npm run bench:edge` that judges
 * issue 34's edge targets), with the same env: `npx tsx load/bench/edge/peer/main.ts`.
 */
const main = async (): Promise<void> => {
  installSignalHandlers()
  const load0 = loadavg()
  try {
    const progress = (m: string) => process.stderr.write(`${m}\n`)
    const result = await measureVersusPeer(versusPeerSettings(), { edge: await bundleWorker(), peer: await bundleWorker('load/bench/edge/peer/worker.ts') }, progress)
    process.stdout.write(`\n${formatVersusPeer(result)}\n\nLoad average at start ${load0.map((x) => x.toFixed(2)).join(' ')}, at end ${loadavg().map((x) => x.toFixed(2)).join(' ')} on ${cpus().length} cores.\n`)
  } finally {
    await cleanUp()
  }
}

main().catch((err: unknown) => {
  if (interrupted()) return
  process.stderr.write(`edge vs peer failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
