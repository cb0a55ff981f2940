import { describe, expect, it } from 'vitest'
import { compareRows } from '../../../../edge/pipeline/respond/shadow.ts'
import { toPrediction } from '../../../../edge/pipeline/respond/predictions.ts'

const post = { output: 'probabilities', labels: ['approve', 'deny'], threshold: 0.5 }
const rows = (...p: number[]) => p.map((deny) => toPrediction([1 - deny, deny], post))

describe('compareRows', () => {
  it('counts agreeing labels and |Δp| of the label the shadow chose against its served probability', () => {
    const { agreeing, diffs } = compareRows(rows(0.2, 0.6, 0.9), rows(0.3, 0.4, 0.9))
    expect(agreeing).toBe(2)
    // Row 2: the shadow chose approve at 0.6; the client was served approve at 0.4.
    expect(diffs.map((d) => Number(d.toFixed(12)))).toEqual([0.1, 0.2, 0])
  })
})
