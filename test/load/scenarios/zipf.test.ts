import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { featureSpec } from '../../../shared/feature-spec.ts'
import { createRandom, createZipfPayloads, zipfSampler } from '../../../load/scenarios/index.js'
import type { Catalog } from '../../../load/scenarios/payloads.js'

const creditRiskCatalog = async (): Promise<Catalog> => {
  const config = JSON.parse(await readFile(new URL('../../../models/credit-risk/config.json', import.meta.url), 'utf8')) as { features: unknown }
  return { name: 'credit-risk', features: featureSpec.parse(config.features).features, rollout: { pinnable: [1, 2] } }
}

describe('Zipf repeats', () => {
  it('draws rank k with probability ∝ 1/(k+1)^s, within range', () => {
    const n = 100
    const s = 1.2
    const draw = zipfSampler(n, s, createRandom(3))
    const counts = new Array<number>(n).fill(0)
    const draws = 200_000
    for (let i = 0; i < draws; i++) counts[draw()]++
    const total = Array.from({ length: n }, (_, k) => 1 / Math.pow(k + 1, s)).reduce((a, b) => a + b)
    for (const k of [0, 1, 9, 99]) {
      const expected = draws / Math.pow(k + 1, s) / total
      // Five binomial standard deviations: a wrong exponent or an off-by-one rank is far outside.
      expect(Math.abs(counts[k] - expected)).toBeLessThan(5 * Math.sqrt(expected) + 1)
    }
    expect(counts.reduce((a, b) => a + b)).toBe(draws)
  })

  it('repeats the same valid one-row requests, the same stream for the same seed', async () => {
    const catalog = await creditRiskCatalog()
    const take = (seed: number) => {
      const stream = createZipfPayloads({ catalog, distinct: 50, exponent: 1.1, seed })
      return Array.from({ length: 500 }, () => stream.next())
    }
    const a = take(5)
    expect(a.map((p) => p.body)).toEqual(take(5).map((p) => p.body))
    expect(a.map((p) => p.body)).not.toEqual(take(6).map((p) => p.body))
    expect(new Set(a.map((p) => p.body)).size).toBeLessThanOrEqual(50)
    for (const p of a) {
      expect(p.kind).toBe('valid')
      expect((JSON.parse(p.body) as { instances: unknown[] }).instances).toHaveLength(1)
      expect(p.headers['X-Model-Version']).toBeUndefined()
    }
  })
})
