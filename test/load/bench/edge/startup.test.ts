import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { BUNDLE_LIMIT_BYTES, bundleSize, formatStartup, type WorkerStartup } from '../../../../load/bench/edge/startup.ts'

const sample = (readyMs: number, firstAnswerMs: number, cpuMs: number) => ({ readyMs, firstAnswerMs, cpuMs })
const size = (totalBytes: number) => ({ totalBytes, entryBytes: totalBytes, gzipBytes: totalBytes / 4 })

describe('formatStartup', () => {
  const floor: WorkerStartup = { name: 'floor', size: size(400_000), samples: [sample(300, 10, 200), sample(900, 90, 900), sample(310, 12, 210)] }

  it('prints medians, so one slow start does not move a row, and edge ÷ floor under each column', () => {
    const edge: WorkerStartup = { name: 'edge', size: size(800_000), samples: [sample(600, 20, 400), sample(620, 24, 420), sample(5_000, 500, 4_000)] }
    const lines = formatStartup([edge, floor]).split('\n')
    expect(lines.find((l) => l.startsWith('edge '))).toMatch(/800 KB\s+800 KB\s+200 KB\s+3\s+620\.0\s+24\.0\s+420\.0$/)
    expect(lines.find((l) => l.startsWith('floor '))).toMatch(/310\.0\s+12\.0\s+210\.0$/)
    expect(lines.find((l) => l.startsWith('edge ÷ floor'))).toMatch(/2\.00×\s+2\.00×\s+2\.00×\s+2\.00×\s+2\.00×\s+2\.00×$/)
    expect(lines.at(-1)).toMatch(/^PASS .*800 KB$/)
  })

  it('judges the sum of the uploaded modules against the bound, not the entry alone', () => {
    const edge: WorkerStartup = { name: 'edge', size: { totalBytes: BUNDLE_LIMIT_BYTES + 1, entryBytes: 600_000, gzipBytes: 250_000 }, samples: [sample(1, 1, 1)] }
    expect(formatStartup([edge, floor]).split('\n').at(-1)).toMatch(/^MISS /)
    expect(formatStartup([{ ...edge, size: { ...edge.size, totalBytes: BUNDLE_LIMIT_BYTES } }, floor]).split('\n').at(-1)).toMatch(/^PASS /)
  })

  it('shows no ratio where the floor has no reading', () => {
    const edge: WorkerStartup = { name: 'edge', size: size(800_000), samples: [sample(600, 20, Number.NaN)] }
    const noCpu: WorkerStartup = { ...floor, samples: [sample(300, 10, Number.NaN)] }
    expect(formatStartup([edge, noCpu]).split('\n').find((l) => l.startsWith('edge ÷ floor'))).toMatch(/2\.00×\s+-$/)
  })
})

describe('bundleSize', () => {
  let dir: string | undefined
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('sums every uploaded module beside the entry and leaves out source maps and the README', async () => {
    dir = await mkdtemp(join(tmpdir(), 'startup-size-'))
    const entry = 'export default {}\n'.repeat(50)
    const chunk = 'export const x = 1\n'.repeat(20)
    await writeFile(join(dir, 'worker.js'), entry)
    await writeFile(join(dir, 'chunk.mjs'), chunk)
    await writeFile(join(dir, 'worker.js.map'), 'x'.repeat(10_000))
    await writeFile(join(dir, 'README.md'), 'x'.repeat(10_000))
    expect(await bundleSize(join(dir, 'worker.js'))).toEqual({
      totalBytes: entry.length + chunk.length,
      entryBytes: entry.length,
      gzipBytes: gzipSync(entry).length + gzipSync(chunk).length,
    })
  })
})
