import { BUCKETS, stickyHash } from '../../shared/sticky-hash.ts'
import { randomHex } from '../random-ids.ts'

/** What a layout is made of: a rollout's arms, its layout when it has one, its canary's seed (rollout.ts's `Rollout` is one). */
interface Arm {
  variant: string
  version: number
  weight: number
}
interface Rollout {
  arms: readonly Arm[]
  layout?: string
  canary?: { variant: string; baseline_variant: string; seed?: string }
}

/** Most arms a rollout may have: the layout names each bucket's arm with one digit. */
export const MAX_ARMS = 8

const DIGIT_ZERO = 48

/** Buckets an arm's weight gives it: one per hundredth of a percent. */
export const bucketsOf = (weight: number): number => Math.round((weight * BUCKETS) / 100)

/** The arm index of each bucket that a layout string's digits name. */
export const decodeLayout = (layout: string): Uint8Array => Uint8Array.from(layout, (digit) => digit.charCodeAt(0) - DIGIT_ZERO)

const encodeLayout = (owners: Uint8Array): string => String.fromCharCode(...owners.map((owner) => owner + DIGIT_ZERO))

/** A rollout stored before layouts existed lays its arms out contiguously in arm order, as routing did then. */
const contiguous = (arms: readonly Arm[]): Uint8Array => {
  const owners = new Uint8Array(BUCKETS)
  let start = 0
  arms.forEach((arm, i) => {
    const end = start + bucketsOf(arm.weight)
    owners.fill(i, start, end)
    start = end
  })
  return owners
}

// Rollouts are immutable once parsed and reused for the cache's lifetime: decode each once.
const decoded = new WeakMap<Rollout, Uint8Array>()

/** The index in `arms` of the arm that owns each bucket. */
export const ownersOf = (rollout: Rollout): Uint8Array => {
  let owners = decoded.get(rollout)
  if (owners === undefined) {
    owners = rollout.layout === undefined ? contiguous(rollout.arms) : decodeLayout(rollout.layout)
    decoded.set(rollout, owners)
  }
  return owners
}

/** Stands for the arms a layout no longer has (and for nobody, before a first layout). */
const GONE = MAX_ARMS

/** Each bucket's place in the order an arm takes buckets in: the canary's own, by its seed. */
const takingOrder = (rollout: Rollout, arm: Arm): Uint32Array => {
  const seed = (rollout.canary?.variant === arm.variant && rollout.canary.seed) || arm.variant
  return Uint32Array.from({ length: BUCKETS }, (_, bucket) => stickyHash(seed, String(bucket)))
}

/**
 * The owners after a change of weights: `previous`'s owners carried over by variant, then
 * buckets moved only from arms that lose weight to arms that gain it, so nobody else moves. A
 * gaining arm takes, in its own order, the buckets of arms that are gone first, then from the
 * losing arms in arm order.
 */
const transfer = (rollout: Rollout, previous: Rollout | undefined): Uint8Array => {
  const indexOf = new Map(rollout.arms.map((arm, i) => [arm.variant, i]))
  const carried = previous?.arms.map((arm) => indexOf.get(arm.variant) ?? GONE) ?? []
  const owners = previous ? ownersOf(previous).map((owner) => carried[owner]) : new Uint8Array(BUCKETS).fill(GONE)
  const held = new Array<number>(MAX_ARMS + 1).fill(0)
  for (const owner of owners) held[owner]++
  const wanted = rollout.arms.map((arm) => bucketsOf(arm.weight))
  const spare = (giver: number) => held[giver] - (wanted[giver] ?? 0)
  rollout.arms.forEach((arm, taker) => {
    let order: Uint32Array | undefined
    for (const giver of [GONE, ...rollout.arms.keys()]) {
      const count = Math.min(wanted[taker] - held[taker], spare(giver))
      if (count <= 0) continue
      const rank = (order ??= takingOrder(rollout, arm))
      const given: number[] = []
      owners.forEach((owner, bucket) => owner === giver && given.push(bucket))
      for (const bucket of given.sort((a, b) => rank[a] - rank[b]).slice(0, count)) owners[bucket] = taker
      held[giver] -= count
      held[taker] += count
    }
  })
  return owners
}

/** The seed of `previous`'s canary if `next` runs the same one on: same arms, same version. */
const continuedSeed = (next: Rollout, previous: Rollout | undefined): string | undefined => {
  const before = previous?.canary
  const after = next.canary
  if (!previous || !before || !after || before.variant !== after.variant || before.baseline_variant !== after.baseline_variant) return undefined
  const versionOf = (rollout: Rollout) => rollout.arms.find((a) => a.variant === after.variant)?.version
  return versionOf(previous) === versionOf(next) ? before.seed : undefined
}

/**
 * `next` with a bucket layout: its own if it has one, else derived from `previous` (the rollout
 * it replaces), so a weight change moves only the users it must, between the arms it involves.
 * A canary that starts without a seed gets a new one; one that runs on keeps its own.
 */
export const withLayout = <R extends Rollout>(next: R, previous: R | undefined): R => {
  const seeded = next.canary && next.canary.seed === undefined ? { ...next, canary: { ...next.canary, seed: continuedSeed(next, previous) ?? randomHex(8) } } : next
  return seeded.layout === undefined ? { ...seeded, layout: encodeLayout(transfer(seeded, previous)) } : seeded
}
