import { createHash } from 'node:crypto'
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { InferenceSession, Tensor } from 'onnxruntime-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelConfig, type ModelConfig } from '../../../backend/repository/model-config.ts'
import { generateApplicants, type Applicant } from '../../../tools/training/applicants.ts'
import { psiReference } from '../../../backend/monitor/drift/baseline-format.ts'
import { predictionReference, type Baseline, type FeatureBaseline } from '../../../tools/training/baseline.ts'
import { HELD_OUT_ROWS, buildDemoRepository, type DemoRepositorySummary } from '../../../tools/training/demo-repository.ts'
import { chiSquareQuantile, psi } from '../../../shared/drift/statistics.ts'
import { encodeInstance, specWidth, type FeatureSpec } from '../../../shared/feature-spec.ts'

const committed = fileURLToPath(new URL('../../../models/credit-risk', import.meta.url))

const listFiles = async (dir: string): Promise<string[]> => {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name))).sort()
}

const readConfig = async (): Promise<ModelConfig> =>
  modelConfig.parse(JSON.parse(await readFile(join(committed, 'config.json'), 'utf8')))

const readBaseline = async (version: number): Promise<Baseline> =>
  JSON.parse(await readFile(join(committed, String(version), 'baseline.json'), 'utf8'))

/** Counts by "edge goes up": a value on an edge belongs to the bin above it. */
const binCounts = (edges: readonly number[], values: readonly number[]): number[] => {
  const counts = new Array<number>(edges.length + 1).fill(0)
  for (const v of values) counts[edges.filter((e) => e <= v).length]++
  return counts
}

/**
 * Live values counted the way the monitor counts them, written out apart from the builder: missing,
 * then numeric bins, or listed categories, other known ones, unknown ones.
 */
const liveCounts = (f: FeatureBaseline, known: readonly string[], values: readonly unknown[]): number[] => {
  const present = values.filter((v) => v !== undefined)
  const missing = values.length - present.length
  if (f.kind === 'numeric') return [missing, ...binCounts(f.edges, present.map(Number))]
  const cells = new Array<number>(f.categories.length + 2).fill(0)
  for (const v of present.map(String)) {
    cells[f.categories.includes(v) ? f.categories.indexOf(v) : known.includes(v) ? f.categories.length : f.categories.length + 1]++
  }
  return [missing, ...cells]
}

/** Rank AUC written out independently of tools/training/metrics.ts (O(n²) is fine at this size). */
const pairwiseAuc = (scores: ArrayLike<number>, labels: ArrayLike<number>): number => {
  let wins = 0
  let pairs = 0
  for (let i = 0; i < labels.length; i++) {
    if (labels[i] !== 1) continue
    for (let j = 0; j < labels.length; j++) {
      if (labels[j] !== 0) continue
      pairs++
      wins += scores[i] > scores[j] ? 1 : scores[i] === scores[j] ? 0.5 : 0
    }
  }
  return wins / pairs
}

const score = async (version: number, spec: FeatureSpec, instances: readonly Record<string, number | string | boolean>[]) => {
  const width = specWidth(spec)
  const data = new Float32Array(instances.length * width)
  instances.forEach((instance, i) => encodeInstance(spec, instance, data.subarray(i * width, (i + 1) * width)))
  const session = await InferenceSession.create(join(committed, String(version), 'model.onnx'))
  try {
    const out = await session.run({ features: new Tensor('float32', data, [instances.length, width]) })
    return out.probabilities
  } finally {
    await session.release()
  }
}

describe('the committed credit-risk repository', () => {
  let rebuilt: string
  let summary: DemoRepositorySummary

  beforeAll(async () => {
    rebuilt = await mkdtemp(join(tmpdir(), 'credit-risk-'))
    summary = await buildDemoRepository(rebuilt)
  })
  afterAll(async () => {
    await rm(rebuilt, { recursive: true, force: true })
  })

  it('is reproduced byte for byte by a fresh build', async () => {
    const files = await listFiles(committed)
    expect(files).toEqual([
      '1/MANIFEST', '1/baseline.json', '1/metrics.json', '1/model.onnx',
      '2/MANIFEST', '2/baseline.json', '2/metrics.json', '2/model.onnx',
      'config.json',
    ])
    expect(await listFiles(join(rebuilt, 'credit-risk'))).toEqual(files)
    for (const file of files) {
      const [a, b] = await Promise.all([readFile(join(committed, file)), readFile(join(rebuilt, 'credit-risk', file))])
      expect(a.equals(b), `${file} differs from a fresh build`).toBe(true)
    }
  })

  it('reports metrics that beat the constant predictor, as written to metrics.json', async () => {
    for (const v of summary.versions) {
      const metrics = JSON.parse(await readFile(join(committed, String(v.version), 'metrics.json'), 'utf8'))
      expect(metrics.holdout).toMatchObject(v.holdout)
      expect(metrics.constant).toMatchObject(v.constant)
      expect(v.holdout.auc).toBeGreaterThan(0.8)
      expect(v.holdout.accuracy).toBeGreaterThan(v.constant.accuracy + 0.05)
      expect(v.holdout.log_loss).toBeLessThan(v.constant.log_loss)
      expect(v.onnxMaxDiff).toBeLessThan(1e-5)
    }
  })

  it('has a config.json the server schema accepts, with a tensor as wide as the feature spec', async () => {
    const config = await readConfig()
    expect(config).toMatchObject({
      name: 'credit-risk',
      max_batch_size: 64,
      version_policy: { latest: 2 },
      pinned: true,
      dynamic_batching: { max_queue_delay_us: 2000, preferred_batch_sizes: [32, 64], max_queue_size: 4096, default_timeout_us: 0 },
      postprocess: { output: 'probabilities', labels: ['low_risk', 'high_risk'], threshold: 0.5 },
    })
    const spec = config.features!
    expect(config.inputs).toEqual([{ name: spec.input, datatype: 'FP32', dims: [specWidth(spec)], allow_non_finite: false }])
    expect(spec.features.some((f) => f.important)).toBe(true)
    expect(spec.features.some((f) => typeof f.source === 'object' && f.source.entity === 'user' && f.source.key === 'user_id')).toBe(true)
  })

  it('has MANIFESTs in sha256sum format that match every other file of their version', async () => {
    for (const version of ['1', '2']) {
      const dir = join(committed, version)
      const text = await readFile(join(dir, 'MANIFEST'), 'utf8')
      expect(text.endsWith('\n')).toBe(true)
      const lines = text.slice(0, -1).split('\n')
      const names = lines.map((line) => {
        const match = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line)
        expect(match, line).not.toBeNull()
        return match![2]
      })
      expect(names).toEqual([...names].sort())
      expect(names).toEqual((await readdir(dir)).filter((f) => f !== 'MANIFEST').sort())
      for (const line of lines) {
        const [sum, name] = line.split('  ')
        expect(createHash('sha256').update(await readFile(join(dir, name))).digest('hex'), name).toBe(sum)
      }
    }
  })

  it('has baselines whose bins hold exactly the training rows, by the "edge goes up" rule', async () => {
    const spec = (await readConfig()).features!
    for (const version of [1, 2]) {
      const baseline = JSON.parse(await readFile(join(committed, String(version), 'baseline.json'), 'utf8'))
      const metrics = JSON.parse(await readFile(join(committed, String(version), 'metrics.json'), 'utf8'))
      const { applicants } = generateApplicants(metrics.training.rows, metrics.training.data_seed)
      expect(baseline).toMatchObject({ format: 3, model: 'credit-risk', version, rows: applicants.length })
      expect(baseline.features.map((f: { name: string }) => f.name)).toEqual(spec.features.map((f) => f.name))
      for (const f of baseline.features) {
        const values = applicants.map((a) => a[f.name as keyof typeof a])
        if (f.kind === 'numeric') {
          expect(f.edges.length).toBeLessThanOrEqual(19)
          f.edges.forEach((e: number, i: number) => i > 0 && expect(e).toBeGreaterThan(f.edges[i - 1]))
          expect(binCounts(f.edges, values as number[]), f.name).toEqual(f.counts)
          expect([f.min, f.max]).toEqual([Math.min(...(values as number[])), Math.max(...(values as number[]))])
        } else {
          const counts: Record<string, number> = { __other__: 0, __unseen__: 0 }
          for (const v of values.map(String)) {
            const key = f.categories.includes(v) ? v : '__other__'
            counts[key] = (counts[key] ?? 0) + 1
          }
          expect(f.counts, f.name).toEqual(counts)
          const spec_ = spec.features.find((s) => s.name === f.name)!
          if (spec_.type === 'boolean') expect(f.categories).toEqual(['false', 'true'])
          else expect(f.categories.map((c: string) => f.counts[c])).toEqual(f.categories.map((c: string) => f.counts[c]).sort((a: number, b: number) => b - a))
          expect(f.counts.__other__).toBeLessThanOrEqual(0.01 * applicants.length)
        }
        expect([f.missing, f.missing_rate]).toEqual([0, 0])
      }
      // The prediction histogram is the model's: re-score the training rows in onnxruntime.
      const probabilities = (await score(version, spec, applicants)).data as Float32Array
      const histogram = new Array(20).fill(0)
      let high = 0
      for (let i = 1; i < probabilities.length; i += 2) {
        histogram[baseline.prediction.edges.filter((e: number) => e <= probabilities[i]).length]++
        if (probabilities[i] >= 0.5) high++
      }
      expect(baseline.prediction.edges).toEqual(Array.from({ length: 19 }, (_, k) => (k + 1) / 20))
      // FP32 against FP64 may move a row sitting on an edge; anything more is a real mismatch.
      const moved = histogram.reduce((n, c, i) => n + Math.abs(c - baseline.prediction.counts[i]), 0)
      expect(moved).toBeLessThanOrEqual(2)
      expect(Math.abs(baseline.prediction.class_counts.high_risk - high)).toBeLessThanOrEqual(1)
      expect(baseline.prediction.class_counts.low_risk + baseline.prediction.class_counts.high_risk).toBe(applicants.length)
      // The calibration is the held-out rows' label share per bin (not the training rows'), as that share of the bin's counted rows.
      const { positives } = baseline.prediction.calibration
      const heldOutSample = generateApplicants(metrics.training.rows + HELD_OUT_ROWS, metrics.training.data_seed)
      const heldOutScores = (await score(version, spec, heldOutSample.applicants.slice(metrics.training.rows))).data as Float32Array
      const heldOut = { rows: new Array(20).fill(0), positives: new Array(20).fill(0) }
      for (let r = 0; r < HELD_OUT_ROWS; r++) {
        const bin = baseline.prediction.edges.filter((e: number) => e <= heldOutScores[2 * r + 1]).length
        heldOut.rows[bin]++
        heldOut.positives[bin] += heldOutSample.labels[metrics.training.rows + r]
      }
      positives.forEach((p: number, i: number) => {
        expect(p).toBeLessThanOrEqual(baseline.prediction.counts[i])
        // FP32 against FP64 may move a held-out row across an edge: a share within a few rows of it.
        if (heldOut.rows[i] > 0 && baseline.prediction.counts[i] > 0) expect(Math.abs(p / baseline.prediction.counts[i] - heldOut.positives[i] / heldOut.rows[i])).toBeLessThan(3 / heldOut.rows[i] + 1e-9)
      })
    }
  })

  it('has drift levels for every feature and the prediction, at or above the floors and the no-drift bound', async () => {
    for (const version of [1, 2]) {
      const baseline = await readBaseline(version)
      const distributions = [
        ...baseline.features.map((f) => ({
          name: f.name, reference: psiReference(f), thresholds: f.thresholds,
          cells: f.kind === 'numeric' ? f.edges.length + 2 : f.categories.length + 3,
        })),
        { name: 'prediction', reference: predictionReference(baseline), thresholds: baseline.prediction.thresholds, cells: 20 },
      ]
      for (const { name, reference, thresholds, cells } of distributions) {
        expect(reference, name).toHaveLength(cells)
        expect(reference.reduce((a, b) => a + b, 0), name).toBe(baseline.rows)
        const { warning, critical, no_drift: noDrift } = thresholds
        expect(thresholds, name).toMatchObject({ statistic: 'psi', window: 1000 })
        expect(warning, name).toBeGreaterThanOrEqual(0.1)
        expect(critical, name).toBeGreaterThanOrEqual(0.2)
        expect(critical, name).toBeGreaterThan(warning)
        const bins = reference.filter((c) => c > 0).length
        const bound = (p: number): number => (1 / 1000 + 1 / baseline.rows) * chiSquareQuantile(p, bins - 1)
        expect(noDrift.reference_bins, name).toBe(bins)
        expect(noDrift.analytic_p99, name).toBeCloseTo(bound(0.99), 12)
        expect(noDrift.analytic_p999, name).toBeCloseTo(bound(0.999), 12)
        expect(noDrift.held_out_windows, name).toBeGreaterThanOrEqual(40)
        expect(warning, name).toBeGreaterThanOrEqual(Math.max(noDrift.analytic_p99, noDrift.held_out_mean + 3 * noDrift.held_out_sd))
        expect(critical, name).toBeGreaterThanOrEqual(Math.max(noDrift.analytic_p999, noDrift.held_out_mean + 5 * noDrift.held_out_sd))
      }
    }
  })

  it('scores a fresh window of 1000 applicants below warning, and a shifted income above critical', async () => {
    const spec = (await readConfig()).features!
    const fresh = generateApplicants(1000, 4_243).applicants
    const known = (name: string): readonly string[] => {
      const f = spec.features.find((s) => s.name === name)!
      return f.type === 'category' ? f.categories : ['false', 'true']
    }
    const scoreFeatures = (baseline: Baseline, rows: readonly Applicant[]) =>
      baseline.features.map((f) => ({
        name: f.name,
        psi: psi(psiReference(f), liveCounts(f, known(f.name), rows.map((a) => a[f.name as keyof Applicant]))),
        thresholds: f.thresholds,
      }))
    for (const version of [1, 2]) {
      const baseline = await readBaseline(version)
      const probabilities = (await score(version, spec, fresh)).data as Float32Array
      const positive = Array.from({ length: fresh.length }, (_, i) => probabilities[2 * i + 1])
      const prediction = {
        name: 'prediction',
        psi: psi(predictionReference(baseline), binCounts(baseline.prediction.edges, positive)),
        thresholds: baseline.prediction.thresholds,
      }
      const alarms = [...scoreFeatures(baseline, fresh), prediction].filter((s) => s.psi >= s.thresholds.warning)
      expect(alarms.map((s) => `${s.name} ${s.psi.toFixed(3)}`), `v${version}`).toHaveLength(0)

      const richer = fresh.map((a) => ({ ...a, income: a.income * 1.5 }))
      const income = scoreFeatures(baseline, richer).find((s) => s.name === 'income')!
      expect(income.psi).toBeGreaterThan(income.thresholds.critical)
    }
  })

  it('v2 ranks fresh applicants well in onnxruntime and beats always-majority accuracy', async () => {
    const spec = (await readConfig()).features!
    const fresh = generateApplicants(3_000, 4_242)
    const out = await score(2, spec, fresh.applicants)
    expect(out.dims).toEqual([3_000, 2])
    const probabilities = out.data as Float32Array
    const high = Float64Array.from({ length: 3_000 }, (_, i) => probabilities[2 * i + 1])
    for (let i = 0; i < 3_000; i++) expect(probabilities[2 * i] + probabilities[2 * i + 1]).toBeCloseTo(1, 5)

    const auc = pairwiseAuc(high, fresh.labels)
    const bestPossible = pairwiseAuc(fresh.risk, fresh.labels)
    const positives = fresh.labels.reduce((n, y) => n + y, 0)
    const majorityAccuracy = Math.max(positives, 3_000 - positives) / 3_000
    const accuracy = high.reduce((n, p, i) => n + ((p >= 0.5 ? 1 : 0) === fresh.labels[i] ? 1 : 0), 0) / 3_000

    expect(auc).toBeGreaterThan(0.8)
    expect(auc).toBeGreaterThan(bestPossible - 0.04)
    expect(accuracy).toBeGreaterThan(majorityAccuracy + 0.05)
  })
})
