import { readFile } from 'node:fs/promises'
import { InferenceSession, Tensor } from 'onnxruntime-node'
import { describe, expect, it } from 'vitest'
import { psi } from '../../../shared/drift/statistics.ts'
import { binIndex } from '../../../shared/drift/statistics.ts'
import { PREDICTION_EDGES, binnedQuality } from '../../../shared/quality.ts'
import { creditRiskSpec, generateApplicants } from '../../../tools/training/applicants.ts'
import { encodeRows } from '../../../tools/training/dataset.ts'
import { labelFlippedModel } from '../../../tools/training/label-flip.ts'

/** P(high_risk) of fresh applicants under a model, binned against their labels. */
const scored = async (model: Uint8Array, rows: number, seed: number) => {
  const sample = generateApplicants(rows, seed)
  const x = encodeRows(creditRiskSpec, sample.applicants)
  const session = await InferenceSession.create(model, { intraOpNumThreads: 1 })
  const p = (await session.run({ features: new Tensor('float32', x.data, [x.rows, x.cols]) })).probabilities.data as Float32Array
  await session.release()
  const bins = Array.from({ length: PREDICTION_EDGES.length + 1 }, () => ({ rows: 0, positives: 0 }))
  for (let r = 0; r < rows; r++) {
    const bin = bins[binIndex(PREDICTION_EDGES, p[2 * r + 1])]
    bin.rows++
    bin.positives += sample.labels[r]
  }
  return { bins, quality: binnedQuality(PREDICTION_EDGES, 0.5, bins) }
}

describe('labelFlippedModel', () => {
  it('keeps the prediction histogram of the original (PSI within sampling noise) while its realized quality collapses', async () => {
    const original = new Uint8Array(await readFile(new URL('../../../models/credit-risk/2/model.onnx', import.meta.url)))
    const flipped = await labelFlippedModel(original, { share: 0.5 })
    const [before, after] = await Promise.all([scored(original, 20_000, 7), scored(flipped, 20_000, 7)])
    // Two samples of 20,000 from one distribution over 20 bins: PSI of a few thousandths.
    expect(psi(before.bins.map((b) => b.rows), after.bins.map((b) => b.rows))).toBeLessThan(0.01)
    expect(before.quality.accuracy! - after.quality.accuracy!).toBeGreaterThan(0.15)
    expect(before.quality.roc_auc! - after.quality.roc_auc!).toBeGreaterThan(0.15)
  })

  it('refuses a share outside (0, 1]', async () => {
    await expect(labelFlippedModel(new Uint8Array(), { share: 0 })).rejects.toThrow(RangeError)
  })
})
