/** Minutes kept in memory: the longest window a consumer may ask for. */
export const RETAINED_MINUTES = 180

/** One minute's counts that Redis has not confirmed yet, as sparse (index, delta) pairs. */
export interface UnsentMinute {
  minute: number
  indices: number[]
  deltas: number[]
}

/**
 * The counts of the last {@link RETAINED_MINUTES} minutes of one version: one flat array per
 * minute in a ring whose arrays are reused, so counting allocates nothing once the ring is
 * warm. With `tracked` (Redis configured) it also keeps what of each minute Redis has
 * confirmed, and the deltas to send are `counts - sent`.
 */
export class MinuteBuckets {
  private readonly minutes = new Float64Array(RETAINED_MINUTES).fill(-1)
  private readonly counts: Float64Array[] = []
  private readonly sent: Float64Array[] = []
  private latest = -1
  private current: Float64Array = new Float64Array(0)

  constructor(readonly size: number, private readonly tracked: boolean) {}

  /**
   * The array `minute` counts into. A minute before the newest one seen counts into the newest:
   * only a clock stepping back produces one, and a stale slot must never be reopened.
   */
  at(minute: number): Float64Array {
    if (minute <= this.latest) return this.current
    this.latest = minute
    const slot = minute % RETAINED_MINUTES
    // The slot holds the minute RETAINED_MINUTES ago (or nothing): its counts have aged out.
    const counts = (this.counts[slot] ??= new Float64Array(this.size)).fill(0)
    if (this.tracked) (this.sent[slot] ??= new Float64Array(this.size)).fill(0)
    this.minutes[slot] = minute
    this.current = counts
    return counts
  }

  /** Adds the counts of minutes `from`…`to` into `into`; with `unsentOnly`, only what Redis has not confirmed. */
  addTo(into: Float64Array, from: number, to: number, unsentOnly: boolean): void {
    for (let slot = 0; slot < RETAINED_MINUTES; slot++) {
      const minute = this.minutes[slot]
      if (minute < from || minute > to) continue
      const counts = this.counts[slot]
      const sent = unsentOnly ? this.sent[slot] : undefined
      for (let i = 0; i < this.size; i++) into[i] += sent ? counts[i] - sent[i] : counts[i]
    }
  }

  /** Every retained minute's counts not yet confirmed by Redis. */
  unsent(): UnsentMinute[] {
    const out: UnsentMinute[] = []
    for (let slot = 0; slot < RETAINED_MINUTES; slot++) {
      const counts = this.counts[slot]
      const sent = this.sent[slot]
      if (!counts || !sent) continue
      const minute: UnsentMinute = { minute: this.minutes[slot], indices: [], deltas: [] }
      for (let i = 0; i < this.size; i++) {
        if (counts[i] === sent[i]) continue
        minute.indices.push(i)
        minute.deltas.push(counts[i] - sent[i])
      }
      if (minute.indices.length > 0) out.push(minute)
    }
    return out
  }

  /** Records deltas Redis confirmed; a minute whose slot was reused meanwhile has nothing left to mark. */
  markSent({ minute, indices, deltas }: UnsentMinute): void {
    const slot = minute % RETAINED_MINUTES
    const sent = this.sent[slot]
    if (this.minutes[slot] !== minute || !sent) return
    for (let k = 0; k < indices.length; k++) sent[indices[k]] += deltas[k]
  }
}
