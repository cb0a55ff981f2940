import type { PolicyQueue } from '../../backend/batcher/policy.ts'

/** A pod's states: serving, not yet ready, and deleted but finishing what it holds. */
export const READY = 0
export const STARTING = 1
export const DRAINING = 2

/** One pod: its one-row requests in arrival order, as the batch policy reads a queue. */
export class Replica implements PolicyQueue {
  /** Every request has the same shape: the simulator models one model version's rows. */
  readonly shape = ''
  state = READY
  /** Arrival times of the rows waiting, from `head` on. */
  queue = new Float64Array(1024)
  head = 0
  tail = 0
  busy = 0
  runningRows = 0
  timerAt = Infinity
  /** Requests routed here, refused ones included: the backend's requests counter. */
  arrivals = 0

  get queued(): number {
    return this.tail - this.head
  }

  get depth(): number {
    return this.tail - this.head + this.runningRows
  }

  /** The oldest request's arrival time. */
  get enqueuedAt(): number {
    return this.queue[this.head]
  }

  peek(): this | undefined {
    return this.tail > this.head ? this : undefined
  }

  rowsOf(): number {
    return this.tail - this.head
  }

  otherShapeWith(): undefined {
    return undefined
  }

  /** With one row a request, the prefix sums are 1, 2, … up to what is queued. */
  largestPrefixIn(_shape: string, sizes: readonly number[], limit: number): number {
    const most = Math.min(this.tail - this.head, limit)
    let best = 0
    for (const size of sizes) if (size <= most && size > best) best = size
    return best
  }

  push(at: number): void {
    if (this.tail === this.queue.length) {
      const live = this.queue.subarray(this.head, this.tail)
      const grown = new Float64Array(Math.max(1024, live.length * 2))
      grown.set(live)
      this.queue = grown
      this.tail -= this.head
      this.head = 0
    }
    this.queue[this.tail++] = at
  }
}
