import { BIN_COUNT, binOf, quantile } from './histogram.ts'

export interface Bucket {
  startS: number
  arrivals: number
  rejected: number
  /** Pods serving traffic, and pods the Deployment holds (ready + starting), at the bucket's end. */
  readyReplicas: number
  replicas: number
  /** Rows waiting and running over all pods, mean and max of one sample a second. */
  meanDepth: number
  maxDepth: number
  p95S: number
  slaViolated: boolean
}

export interface SimulationResult {
  buckets: Bucket[]
  arrivals: number
  served: number
  rejected: number
  /** Mean time from arrival to the start of its batch. */
  meanWaitS: number
  meanLatencyS: number
  p50S: number
  p95S: number
  p99S: number
  /** Integral of pods held (ready or starting) over time: what the GPU nodes cost. */
  replicaSeconds: number
  maxReplicas: number
  meanBatchRows: number
}

/**
 * What a simulation counts, per time bucket and in all: arrivals, refusals, each served row's wait
 * and latency (in log-spaced bins, at a fixed cost per row), and the depth and pods once a second.
 */
export class Accounting {
  private readonly bucketCount: number
  private readonly bucketLatencies: Int32Array
  private readonly latencies = new Float64Array(BIN_COUNT)
  private readonly bucketArrivals: Float64Array
  private readonly bucketRejected: Float64Array
  private readonly depthSum: Float64Array
  private readonly depthMax: Float64Array
  private readonly depthSamples: Float64Array
  private readonly readyAtEnd: Int32Array
  private readonly heldAtEnd: Int32Array
  private arrivals = 0
  private served = 0
  private rejected = 0
  private waitSum = 0
  private latencySum = 0
  private batches = 0

  constructor(durationS: number, private readonly bucketS: number, private readonly slaP95S: number) {
    const bucketCount = (this.bucketCount = Math.ceil(durationS / bucketS))
    this.bucketLatencies = new Int32Array(bucketCount * BIN_COUNT)
    this.bucketArrivals = new Float64Array(bucketCount)
    this.bucketRejected = new Float64Array(bucketCount)
    this.depthSum = new Float64Array(bucketCount)
    this.depthMax = new Float64Array(bucketCount)
    this.depthSamples = new Float64Array(bucketCount)
    this.readyAtEnd = new Int32Array(bucketCount)
    this.heldAtEnd = new Int32Array(bucketCount)
  }

  arrived(at: number): void {
    this.arrivals++
    this.bucketArrivals[Math.floor(at / this.bucketS)]++
  }

  refused(at: number): void {
    this.rejected++
    this.bucketRejected[Math.floor(at / this.bucketS)]++
  }

  /** A batch of the rows that arrived at `arrivedAt[from … from + rows)` started at `now` and finishes at `done`. */
  batch(arrivedAt: Float64Array, from: number, rows: number, now: number, done: number): void {
    const bucket = Math.min(this.bucketCount - 1, Math.floor(done / this.bucketS))
    const offset = bucket * BIN_COUNT
    for (let i = from, end = from + rows; i < end; i++) {
      const arrived = arrivedAt[i]
      this.waitSum += now - arrived
      const latency = done - arrived
      this.latencySum += latency
      const bin = binOf(latency)
      this.latencies[bin]++
      this.bucketLatencies[offset + bin]++
    }
    this.served += rows
    this.batches++
  }

  /** The once-a-second sample taken at `now` of the second before it. */
  sample(now: number, depth: number, ready: number, held: number): void {
    const bucket = Math.min(this.bucketCount - 1, Math.floor((now - 1) / this.bucketS))
    this.depthSum[bucket] += depth
    this.depthSamples[bucket]++
    this.depthMax[bucket] = Math.max(this.depthMax[bucket], depth)
    this.readyAtEnd[bucket] = ready
    this.heldAtEnd[bucket] = held
  }

  result(replicaSeconds: number, maxReplicas: number): SimulationResult {
    const { served, batches, latencies, bucketRejected } = this
    const buckets: Bucket[] = []
    for (let b = 0; b < this.bucketCount; b++) {
      const p95S = quantile(this.bucketLatencies, 95, b * BIN_COUNT)
      buckets.push({
        startS: b * this.bucketS,
        arrivals: this.bucketArrivals[b],
        rejected: bucketRejected[b],
        readyReplicas: this.readyAtEnd[b],
        replicas: this.heldAtEnd[b],
        meanDepth: this.depthSamples[b] > 0 ? this.depthSum[b] / this.depthSamples[b] : 0,
        maxDepth: this.depthMax[b],
        p95S,
        slaViolated: p95S > this.slaP95S || bucketRejected[b] > 0,
      })
    }
    return {
      buckets,
      arrivals: this.arrivals,
      served,
      rejected: this.rejected,
      meanWaitS: served > 0 ? this.waitSum / served : Number.NaN,
      meanLatencyS: served > 0 ? this.latencySum / served : Number.NaN,
      p50S: quantile(latencies, 50),
      p95S: quantile(latencies, 95),
      p99S: quantile(latencies, 99),
      replicaSeconds,
      maxReplicas,
      meanBatchRows: batches > 0 ? served / batches : Number.NaN,
    }
  }
}
