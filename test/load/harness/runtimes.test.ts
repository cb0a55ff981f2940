import { afterEach, describe, expect, it } from 'vitest'
import { benchRuntimes, parseNodeList } from '../../../load/harness/runtimes.ts'
import { setProcessEnv } from '../../support/process-env.ts'

describe('parseNodeList', () => {
  it('falls back to the given binary when BENCH_NODES is unset, empty or only commas', () => {
    for (const raw of [undefined, '', ' , ,']) expect(parseNodeList(raw, '/opt/node/bin/node', '/repo')).toEqual(['/opt/node/bin/node'])
  })

  it('keeps the order given, trims, and resolves paths with a slash against cwd', () => {
    expect(parseNodeList(' node_modules/.bin/node , /usr/bin/node,node ', '/x', '/repo')).toEqual(['/repo/node_modules/.bin/node', '/usr/bin/node', 'node'])
  })
})

describe('benchRuntimes', () => {
  let restore = () => {}
  afterEach(() => restore())

  it('reports the version of each binary', () => {
    restore = setProcessEnv({ BENCH_NODES: process.execPath })
    expect(benchRuntimes()).toEqual([{ bin: process.execPath, version: process.version }])
  })

  it('refuses a version named twice, since rows are told apart by version', () => {
    restore = setProcessEnv({ BENCH_NODES: `${process.execPath},${process.execPath}` })
    expect(() => benchRuntimes()).toThrow(/are both v/)
  })

  it('refuses a binary that does not run as Node', () => {
    restore = setProcessEnv({ BENCH_NODES: '/nonexistent/node' })
    expect(() => benchRuntimes()).toThrow(/\/nonexistent\/node did not run as Node/)
  })
})
