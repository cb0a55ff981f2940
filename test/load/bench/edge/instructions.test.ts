import { describe, expect, it } from 'vitest'
import { appInstructions, formatInstructionsTable, instructionsFigure, instructionsPerRequest, parseInstructionCount } from '../../../../load/bench/edge/instructions.ts'

describe('instructions per request (bench:edge, valgrind via instructions.sh)', () => {
  it('reads the count from the last line instructions.sh prints, after whatever the command wrote', () => {
    expect(parseInstructionCount('child output\n\n1849025265\n')).toBe(1_849_025_265)
    expect(parseInstructionCount('1355371463')).toBe(1_355_371_463)
  })

  it('refuses a last line that is not a count', () => {
    expect(() => parseInstructionCount('1849025265\nvalgrind: oops\n')).toThrow(/did not end with a count/)
    expect(() => parseInstructionCount('')).toThrow(/did not end with a count/)
    expect(() => parseInstructionCount('12.5\n')).toThrow(/did not end with a count/)
  })

  it('divides the difference of the counts by the difference of the requests, not by either count', () => {
    // 200 requests: 1,000,000,000; 1,200 requests: 1,600,000,000 → 600,000,000 ÷ 1,000 = 600,000.
    expect(instructionsPerRequest({ requests: 200, instructions: 1_000_000_000 }, { requests: 1_200, instructions: 1_600_000_000 })).toBe(600_000)
    expect(instructionsPerRequest({ requests: 100, instructions: 50 }, { requests: 300, instructions: 450 })).toBe(2)
  })

  it('refuses a high run that does not send more requests than the low one', () => {
    expect(() => instructionsPerRequest({ requests: 200, instructions: 5 }, { requests: 200, instructions: 9 })).toThrow()
    expect(() => instructionsPerRequest({ requests: 1_200, instructions: 9 }, { requests: 200, instructions: 5 })).toThrow()
  })

  it('keeps each repetition and their mean, and divides pipeline by floor', () => {
    const pipeline = appInstructions('pipeline', [
      { low: { requests: 200, instructions: 1_000 }, high: { requests: 1_200, instructions: 701_000 } }, // 700
      { low: { requests: 200, instructions: 2_000 }, high: { requests: 1_200, instructions: 902_000 } }, // 900
    ])
    const floor = appInstructions('floor', [
      { low: { requests: 200, instructions: 10 }, high: { requests: 1_200, instructions: 300_010 } }, // 300
      { low: { requests: 200, instructions: 20 }, high: { requests: 1_200, instructions: 500_020 } }, // 500
    ])
    expect(pipeline).toEqual({ app: 'pipeline', perRequest: [700, 900], mean: 800 })
    expect(floor).toEqual({ app: 'floor', perRequest: [300, 500], mean: 400 })
    expect(instructionsFigure(pipeline, floor).ratio).toBe(2)
  })

  it('prints each repetition, the mean and the ratio', () => {
    const pipeline = appInstructions('pipeline', [{ low: { requests: 0, instructions: 0 }, high: { requests: 1, instructions: 681_000 } }])
    const floor = appInstructions('floor', [{ low: { requests: 0, instructions: 0 }, high: { requests: 1, instructions: 566_000 } }])
    const table = formatInstructionsTable(instructionsFigure(pipeline, floor))
    expect(table).toMatch(/pipeline \(createApp\)\s+681\.0k\s+681\.0k/)
    expect(table).toMatch(/floor \(bare Hono\)\s+566\.0k\s+566\.0k/)
    expect(table).toMatch(/pipeline ÷ floor\s+1\.20×/)
  })
})
