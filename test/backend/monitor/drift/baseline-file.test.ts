import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { BASELINE_FILE } from '../../../../backend/monitor/drift/baseline-file.ts'
import { DriftMonitor } from '../../../../backend/monitor/drift/monitor.ts'
import { createLogger, type Logger } from '../../../../backend/logger.ts'
import { modelConfig } from '../../../../backend/repository/model-config.ts'
import { baseline, config } from './fixture.ts'

let dir: string
let warnings: Array<Record<string, unknown>>
let monitor: DriftMonitor

const logger: Logger = { ...createLogger('silent'), warn: (msg, fields) => warnings.push({ msg, ...fields }) }
const writeBaseline = (value: unknown) => writeFile(join(dir, BASELINE_FILE), JSON.stringify(value))

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'drift-baseline-'))
  warnings = []
  monitor = new DriftMonitor({ logger })
})

afterEach(() => rm(dir, { recursive: true, force: true }))

describe('DriftMonitor.open', () => {
  it('counts a version with a feature spec and a baseline that fits, and keeps its counter across reloads', async () => {
    // Fields the counter does not read (reference counts, thresholds) are allowed.
    await writeBaseline({ format: 3, ...baseline, rows: 100 })
    const counter = await monitor.open('toy', 1, config, dir)
    expect(counter?.layout.features.map((f) => f.name)).toEqual(['score', 'color', 'flag'])
    expect(await monitor.open('toy', 1, config, dir)).toBe(counter)
    expect(warnings).toEqual([])
  })

  it('does not count a version without a baseline or without a feature spec', async () => {
    expect(await monitor.open('toy', 1, config, dir)).toBeUndefined()
    await writeBaseline(baseline)
    const { features: _, ...bare } = config
    expect(await monitor.open('toy', 1, modelConfig.parse(bare), dir)).toBeUndefined()
    expect(warnings).toEqual([])
  })

  it('does not count, and says why, when the baseline is malformed or does not fit the spec', async () => {
    await writeBaseline({ ...baseline, prediction: { edges: [0.5, 0.25] } })
    expect(await monitor.open('toy', 1, config, dir)).toBeUndefined()
    await writeBaseline({ ...baseline, features: baseline.features.slice(1) })
    expect(await monitor.open('toy', 2, config, dir)).toBeUndefined()
    expect(warnings).toEqual([
      expect.objectContaining({ msg: 'drift counting off for model version', version: 1, error: expect.stringContaining('prediction.edges: edges must be strictly ascending') }),
      expect.objectContaining({ msg: 'drift counting off for model version', version: 2, error: 'the baseline has 2 features, the spec 3' }),
    ])
  })
})
