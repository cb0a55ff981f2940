/** Per model version counters for `/v2/models/{m}/versions/{v}/stats`, cheap on the hot path. */
const WINDOW = 4096

export interface StatsSnapshot {
  success: number
  failure: number
  rows: number
  batches: number
  last_inference_ms: number
  /** Quantiles over the last requests, in microseconds. */
  latency_us: { p50: number; p90: number; p99: number; max: number; window: number }
  queue_us_total: number
  compute_us_total: number
}

export class VersionStats {
  private success = 0
  private failure = 0
  private rows = 0
  private batches = 0
  private lastInference = 0
  private queueUs = 0
  private computeUs = 0
  private readonly latencies = new Float64Array(WINDOW)
  private recorded = 0

  request(ok: boolean, rows: number, latencyUs: number, queueUs: number): void {
    if (ok) this.success++
    else this.failure++
    this.rows += ok ? rows : 0
    this.queueUs += queueUs
    this.lastInference = Date.now()
    this.latencies[this.recorded++ % WINDOW] = latencyUs
  }

  batch(computeUs: number): void {
    this.batches++
    this.computeUs += computeUs
  }

  snapshot(): StatsSnapshot {
    const n = Math.min(this.recorded, WINDOW)
    const sorted = this.latencies.slice(0, n).sort()
    const q = (p: number) => (n === 0 ? 0 : Math.round(sorted[Math.min(n - 1, Math.floor(p * n))]))
    return {
      success: this.success,
      failure: this.failure,
      rows: this.rows,
      batches: this.batches,
      last_inference_ms: this.lastInference,
      latency_us: { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: n === 0 ? 0 : Math.round(sorted[n - 1]), window: n },
      queue_us_total: this.queueUs,
      compute_us_total: this.computeUs,
    }
  }
}
