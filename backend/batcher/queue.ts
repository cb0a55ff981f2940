import type { PolicyQueue } from './policy.ts'

/** What the queue needs of a waiting request. */
export interface Queued {
  /** The non-batch dims of every input: only requests with the same shape can share a batch. */
  readonly shape: string
  readonly rows: number
  readonly enqueuedAt: number
  /** Set once the request has left the queue: taken, expired or cancelled. */
  settled: boolean
}

/**
 * The batcher's waiting requests in arrival order, with rows counted per shape. A request that
 * leaves out of order (expired, cancelled) is only marked settled and skipped until it reaches
 * the front, as in Triton's priority queue.
 */
export class BatchQueue<E extends Queued> implements PolicyQueue {
  /**
   * Arrival order in `slots[head]…slots[tail - 1]`. Slots before `head` are cleared, so the queue
   * keeps no answered request's objects alive into the old generation, and both indices go back to
   * 0 whenever it empties, so the array is reused instead of grown.
   */
  private slots: Array<E | undefined> = []
  private head = 0
  private tail = 0
  private queuedRows = 0
  /** Rows waiting per shape (one entry for a model without variable inner dims). */
  private rowsByShape = new Map<string, number>()

  /** Rows waiting, of every shape. */
  get rows(): number {
    return this.queuedRows
  }

  /** Slots in use, settled requests not yet skipped included: a bound on the batches the queue can still give. */
  get slotsInUse(): number {
    return this.tail - this.head
  }

  push(entry: E): void {
    this.slots[this.tail++] = entry
    this.count(entry.shape, entry.rows)
  }

  /** Takes `entry` out of the count; false if it had already left. */
  remove(entry: E): boolean {
    if (entry.settled) return false
    entry.settled = true
    this.count(entry.shape, -entry.rows)
    return true
  }

  peek(): E | undefined {
    const { slots } = this
    while (this.head < this.tail && slots[this.head]!.settled) slots[this.head++] = undefined
    if (this.head === this.tail) {
      this.head = this.tail = 0
    } else if (this.head > 1024 && this.head * 2 > this.tail) {
      // A long-lived entry at the front (a different shape, a far deadline) with many behind it: move the live part down.
      slots.copyWithin(0, this.head, this.tail)
      slots.fill(undefined, this.tail - this.head, this.tail)
      this.tail -= this.head
      this.head = 0
    }
    return slots[this.head]
  }

  /**
   * Takes entries of `shape` in arrival order, at most `count` of them and `rows` rows in all,
   * stopping at the first that does not fit; entries of other shapes keep their places.
   */
  take(shape: string, count: number, rows: number): E[] {
    const taken: E[] = []
    let total = 0
    for (let i = this.head; i < this.tail && taken.length < count; i++) {
      const entry = this.slots[i]!
      if (entry.settled || entry.shape !== shape) continue
      if (total + entry.rows > rows) break
      entry.settled = true
      total += entry.rows
      taken.push(entry)
    }
    this.count(shape, -total)
    this.peek()
    return taken
  }

  rowsOf(shape: string): number {
    return this.rowsByShape.get(shape) ?? 0
  }

  otherShapeWith(shape: string, rows: number): string | undefined {
    if (this.rowsByShape.size < 2) return undefined
    for (const [other, waiting] of this.rowsByShape) if (other !== shape && waiting >= rows) return other
    return undefined
  }

  largestPrefixIn(shape: string, sizes: readonly number[], limit: number): number {
    let best = 0
    let sum = 0
    for (let i = this.head; i < this.tail; i++) {
      const entry = this.slots[i]!
      if (entry.settled || entry.shape !== shape) continue
      sum += entry.rows
      if (sum > limit) break
      if (sizes.includes(sum)) best = sum
    }
    return best
  }

  private count(shape: string, rows: number): void {
    this.queuedRows += rows
    const left = (this.rowsByShape.get(shape) ?? 0) + rows
    if (left === 0) this.rowsByShape.delete(shape)
    else this.rowsByShape.set(shape, left)
  }
}
