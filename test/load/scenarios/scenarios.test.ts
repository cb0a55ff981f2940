import { readFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_FEATURE_SEED } from '../../../edge/stores/features/memory.ts'
import { normalizeBody } from '../../../edge/pipeline/normalize/normalize.ts'
import { compilePredictSchema } from '../../../edge/pipeline/validate/compile-spec.ts'
import { featureSpec } from '../../../shared/feature-spec.ts'
import { cleanUp } from '../../../load/harness/processes.ts'
import { startLocalStack, type LocalStack } from '../../../load/harness/stack.ts'
import {
  DEFAULT_MIX, SCENARIOS, SEEDED_USER_IDS, createPayloads, crossedThresholds, k6Options, rateAt, scaled, totalDurationS,
} from '../../../load/scenarios/index.js'
import type { Catalog, Payload } from '../../../load/scenarios/payloads.js'

/** The catalog entry the edge serves for credit-risk, built from the model's own config. */
const creditRiskCatalog = async (): Promise<Catalog> => {
  const config = JSON.parse(await readFile(new URL('../../../models/credit-risk/config.json', import.meta.url), 'utf8')) as { features: unknown }
  const spec = featureSpec.parse(config.features)
  return { name: 'credit-risk', features: spec.features, rollout: { pinnable: [1, 2] } }
}

const share = (payloads: Payload[], test: (p: Payload) => boolean) => payloads.filter(test).length / payloads.length

describe('scenario payloads', () => {
  it('know the ids the local feature store is seeded with', () => {
    expect(SEEDED_USER_IDS).toEqual(Object.keys(DEFAULT_FEATURE_SEED.user))
  })

  it('are the same stream for the same seed, another for another', async () => {
    const catalog = await creditRiskCatalog()
    const stream = (seed: number) => Array.from({ length: 50 }, (() => { const p = createPayloads({ catalog, seed }); return () => p.next() })())
    expect(stream(3).map((p) => p.body)).toEqual(stream(3).map((p) => p.body))
    expect(stream(3).map((p) => p.body)).not.toEqual(stream(4).map((p) => p.body))
  })

  it('mix identities, pins and inputs in the configured shares', async () => {
    const catalog = await creditRiskCatalog()
    const mix = { knownEntityShare: 0.5, experimentKeyShare: 0.3, pinnedShare: 0.2, fixShare: 0.1, refuseShare: 0.05 }
    const gen = createPayloads({ catalog, mix, seed: 11 })
    const payloads = Array.from({ length: 8_000 }, () => gen.next())
    const known = new Set(SEEDED_USER_IDS)
    expect(share(payloads, (p) => known.has(p.entityId ?? ''))).toBeCloseTo(0.5, 1)
    expect(share(payloads, (p) => p.headers['X-Experiment-Key'] !== undefined)).toBeCloseTo(0.3, 1)
    expect(share(payloads, (p) => p.entityId?.startsWith('anon-') === true)).toBeCloseTo(0.2, 1)
    expect(share(payloads, (p) => p.headers['X-Model-Version'] !== undefined)).toBeCloseTo(0.2, 1)
    expect(share(payloads, (p) => p.kind === 'fixed')).toBeCloseTo(0.1, 1)
    expect(share(payloads, (p) => p.kind === 'refused')).toBeCloseTo(0.05, 1)
    // credit-risk requires the user entity: experiment users send their key as the id too.
    for (const p of payloads.filter((x) => x.headers['X-Experiment-Key'] !== undefined)) expect(p.entityId).toBe(p.headers['X-Experiment-Key'])
    expect(new Set(payloads.map((p) => p.headers['X-Model-Version']).filter(Boolean))).toEqual(new Set(['1', '2']))
  })

  it('pass the edge\'s own normalization and validation exactly when they should', async () => {
    const catalog = await creditRiskCatalog()
    const spec = featureSpec.parse({ input: 'features', features: catalog.features })
    const validator = compilePredictSchema(spec)
    const gen = createPayloads({ catalog, mix: { fixShare: 0.3, refuseShare: 0.3 }, seed: 5 })
    const verdicts = new Map<string, number>()
    for (let i = 0; i < 3_000; i++) {
      const p = gen.next()
      let accepted = false
      let fixes = 0
      try {
        const normalized = normalizeBody(JSON.parse(p.body), spec)
        fixes = normalized.fixes
        accepted = validator.validate(normalized.body).success
      } catch {
        accepted = false
      }
      const verdict = `${p.kind} ${accepted ? 'accepted' : 'refused'}${p.kind === 'fixed' && fixes === 0 ? ' unfixed' : ''}`
      verdicts.set(verdict, (verdicts.get(verdict) ?? 0) + 1)
      // Valid instances are what they claim: every request feature inside its range or categories.
      if (p.kind !== 'refused') expect(validator.validate({ instances: p.instances, entity: { user_id: 'u-1' } }).success).toBe(true)
    }
    expect([...verdicts.keys()].sort()).toEqual(['fixed accepted', 'refused refused', 'valid accepted'])
  })

  it('vary their values over the spec\'s ranges and categories', async () => {
    const catalog = await creditRiskCatalog()
    const gen = createPayloads({ catalog, mix: { fixShare: 0, refuseShare: 0 }, seed: 2 })
    const rows = Array.from({ length: 2_000 }, () => gen.next().instances[0])
    for (const f of catalog.features.filter((x) => x.source === 'request')) {
      const values = new Set(rows.map((r) => r[f.name]))
      if (f.type === 'category') expect(values).toEqual(new Set(f.categories))
      else if (f.type === 'boolean') expect(values).toEqual(new Set([true, false]))
      else expect(values.size).toBeGreaterThan(10)
    }
  })
})

describe('scenario shapes', () => {
  it('rate follows the stages and scales to a length and a peak', () => {
    const spike = SCENARIOS.spike
    expect(rateAt(spike, 5)).toBeCloseTo(0.2 * spike.peakRate)
    expect(rateAt(spike, 11)).toBeCloseTo(0.6 * spike.peakRate)
    expect(rateAt(spike, 15)).toBeCloseTo(spike.peakRate)
    expect(rateAt(spike, totalDurationS(spike) + 1)).toBe(0)
    const short = scaled(spike, { durationS: 6.8, peakRate: 30 })
    expect(totalDurationS(short)).toBeCloseTo(6.8)
    expect(rateAt(short, 3)).toBeCloseTo(30)
  })

  it('are continuous (k6 ramps each stage from the previous target)', () => {
    for (const scenario of Object.values(SCENARIOS)) {
      for (let i = 1; i < scenario.stages.length; i++) expect(scenario.stages[i].from).toBeCloseTo(scenario.stages[i - 1].to, 9)
    }
  })

  it('become k6 executors: constant for a flat shape, ramping otherwise', () => {
    expect(k6Options(SCENARIOS.steady).scenarios.steady).toMatchObject({ executor: 'constant-arrival-rate', rate: 100, duration: '30s' })
    const diurnal = k6Options(SCENARIOS.diurnal).scenarios.diurnal as { executor: string; stages: Array<{ target: number }> }
    expect(diurnal.executor).toBe('ramping-arrival-rate')
    expect(diurnal.stages).toHaveLength(24)
    expect(Math.max(...diurnal.stages.map((s) => s.target))).toBe(SCENARIOS.diurnal.peakRate)
  })

  it('name each threshold a run crossed', () => {
    const sla = { p95Ms: 50, p99Ms: 100, maxErrorRate: 0.001 }
    expect(crossedThresholds(sla, { p95Ms: 49, p99Ms: 99, errorRate: 0 })).toEqual([])
    expect(crossedThresholds(sla, { p95Ms: 50, p99Ms: 99, errorRate: 0.001 })).toEqual(['p95 50.0 ms ≥ 50 ms', 'error rate 0.10% ≥ 0.10%'])
    expect(crossedThresholds(sla, { p95Ms: Number.NaN, p99Ms: Number.NaN, errorRate: 0 })).toHaveLength(2)
  })

  it('default to the documented mix', () => {
    expect(DEFAULT_MIX.refuseShare).toBeLessThan(DEFAULT_MIX.fixShare)
    expect(DEFAULT_MIX.knownEntityShare + DEFAULT_MIX.experimentKeyShare).toBeLessThanOrEqual(1)
  })
})

describe('scenario payloads through the local stack (backend + the edge in workerd)', () => {
  let stack: LocalStack
  beforeAll(async () => {
    stack = await startLocalStack()
  })
  afterAll(async () => {
    await stack?.stop()
    await cleanUp()
  })

  it('the edge accepts the valid and fixed share and refuses the refuse share', async () => {
    const catalog = (await (await fetch(`${stack.edgeUrl}/v1/models/credit-risk`, { headers: { 'x-api-key': stack.apiKey } })).json()) as Catalog
    const gen = createPayloads({ catalog, mix: { fixShare: 0.25, refuseShare: 0.25 }, seed: 9 })
    const outcomes: Array<{ kind: string; status: number; normalized: number; variant: string | null }> = []
    for (let i = 0; i < 120; i++) {
      const p = gen.next()
      const res = await fetch(`${stack.edgeUrl}${gen.path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': stack.apiKey, ...p.headers }, body: p.body })
      await res.arrayBuffer()
      outcomes.push({ kind: p.kind, status: res.status, normalized: Number(res.headers.get('x-input-normalized') ?? 0), variant: res.headers.get('x-variant') })
      expect({ kind: p.kind, alteration: p.alteration, status: res.status }).toEqual({ kind: p.kind, alteration: p.alteration, status: p.expectedStatus })
    }
    expect(new Set(outcomes.map((o) => o.kind))).toEqual(new Set(['valid', 'fixed', 'refused']))
    for (const o of outcomes.filter((x) => x.kind === 'fixed')) expect(o.normalized).toBeGreaterThan(0)
    for (const o of outcomes.filter((x) => x.kind === 'valid')) expect(o.normalized).toBe(0)
    expect(new Set(outcomes.filter((o) => o.status === 200).map((o) => o.variant))).toEqual(new Set(['stable', 'pinned']))
  })
})
