import { Miniflare } from 'miniflare'
import { bundledWorkerOptions } from '../../../dev/workerd.ts'
import { percentile } from '../../harness/percentile.ts'
import type { PipelineWorkerBindings } from './pipeline-worker.ts'

export type WorkerdApp = 'edge' | 'floor'

export interface WorkerdPipelineResult {
  app: WorkerdApp
  batches: number
  batchSize: number
  /** Per-request mean of each batch (its call time less an empty call's, ÷ batch size): median and 90th percentile over batches. */
  medianUs: number
  p90Us: number
}

/** The pipeline's cost per request over the floor's, judged so that it does not move with the neighbours. */
export interface WorkerdRatio {
  /** Batches of the pipeline and the floor run back to back, each pair on the same machine state. */
  pairs: number
  /** Median over pairs of (pipeline batch − empty call) ÷ (floor batch − empty call). */
  median: number
}

/** The target the redesign is held to: the pipeline at most this many times the bare-Hono floor. */
export const WORKERD_RATIO_TARGET = 2.5

/**
 * Median of the per-pair ratios: each pipeline batch divided by the floor batch that ran right
 * after it, both less the empty call's cost. A slow spell lands on both halves of a pair alike.
 */
export const pairedRatio = (edgeMs: readonly number[], floorMs: readonly number[], emptyMs: number): WorkerdRatio => {
  // A pair whose floor took no longer than the empty call measured nothing: it is left out, not divided by.
  const ratios = edgeMs.flatMap((ms, i) => (floorMs[i]! > emptyMs ? [(ms - emptyMs) / (floorMs[i]! - emptyMs)] : [])).sort((x, y) => x - y)
  return { pairs: ratios.length, median: ratios.length > 0 ? percentile(ratios, 50) : Number.NaN }
}


/**
 * The pipeline in workerd itself (`load/bench/edge/pipeline-worker.ts`, bundled like the worker): each
 * call runs `batchSize` sequential requests in-process; a call with none measures what the
 * call itself costs. Calls alternate between the apps and an empty call, so both see the same
 * machine. Per-request numbers are batch means, not single requests: workerd's clock does not
 * move inside a request.
 */
export const measureInWorkerd = async ({
  bundle,
  bindings,
  batches,
  batchSize,
}: {
  bundle: string
  bindings: PipelineWorkerBindings
  batches: number
  batchSize: number
}): Promise<{ results: WorkerdPipelineResult[]; ratio: WorkerdRatio }> => {
  const mf = new Miniflare(await bundledWorkerOptions({ bundle, bindings: { ...bindings } }))
  try {
    const call = async (app: WorkerdApp, n: number): Promise<number> => {
      const started = performance.now()
      const res = await mf.dispatchFetch(`http://bench.local/run?app=${app}&n=${n}`)
      const text = await res.text()
      if (res.status !== 200) throw new Error(`the pipeline worker answered ${res.status}: ${text.slice(0, 500)}`)
      return performance.now() - started
    }
    const apps: WorkerdApp[] = ['edge', 'floor']
    for (let i = 0; i < 5; i++) for (const app of apps) await call(app, batchSize)
    const empty: number[] = []
    const full = new Map<WorkerdApp, number[]>(apps.map((app) => [app, []]))
    for (let b = 0; b < batches; b++) {
      empty.push(await call('edge', 0))
      for (const app of apps) full.get(app)!.push(await call(app, batchSize))
    }
    const overhead = percentile([...empty].sort((x, y) => x - y), 50)
    const results = apps.map((app) => {
      const means = full.get(app)!.map((ms) => ((ms - overhead) / batchSize) * 1e3).sort((x, y) => x - y)
      return { app, batches, batchSize, medianUs: percentile(means, 50), p90Us: percentile(means, 90) }
    })
    return { results, ratio: pairedRatio(full.get('edge')!, full.get('floor')!, overhead) }
  } finally {
    await mf.dispose()
  }
}
