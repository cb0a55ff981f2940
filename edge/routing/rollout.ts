import { z } from 'zod'
import { BUCKETS, stickyBucket } from '../../shared/sticky-hash.ts'

/**
 * How a model's traffic is split: arms with weights summing to 100 (A/B arms and the canary),
 * which versions a client may pin, and an optional shadow version.
 */
export const rolloutSchema = z
  .strictObject({
    /** Salt of the sticky hash: changing it reshuffles every user. */
    salt: z.string().min(1).max(64),
    arms: z
      .array(z.strictObject({
        variant: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/),
        version: z.number().int().positive(),
        weight: z.number().min(0).max(100),
      }))
      .min(1)
      .max(8),
    /** Versions clients may pin with X-Model-Version; empty means only the arms' versions. */
    pinnable: z.array(z.number().int().positive()).default([]),
    shadow: z.strictObject({ version: z.number().int().positive(), percent: z.number().min(0).max(100) }).optional(),
  })
  .superRefine((r, ctx) => {
    const total = r.arms.reduce((n, a) => n + a.weight, 0)
    if (Math.abs(total - 100) > 1e-9) ctx.addIssue({ code: 'custom', path: ['arms'], message: `weights sum to ${total}, not 100` })
    const names = new Set(r.arms.map((a) => a.variant))
    if (names.size !== r.arms.length) ctx.addIssue({ code: 'custom', path: ['arms'], message: 'variant names must be unique' })
  })

export type Rollout = z.infer<typeof rolloutSchema>

export interface Assignment {
  variant: string
  version: number
  /** How the version was chosen. */
  by: 'pin' | 'sticky'
  /** A version that also gets this request, for comparison only. */
  shadow?: number
}

/** The arm a sticky key lands in: buckets are laid out in arm order, proportional to weight. */
export const assignArm = (rollout: Rollout, key: string): Assignment => {
  const bucket = stickyBucket(rollout.salt, key)
  let upper = 0
  for (const arm of rollout.arms) {
    upper += (arm.weight / 100) * BUCKETS
    if (bucket < upper) return { variant: arm.variant, version: arm.version, by: 'sticky' }
  }
  const last = rollout.arms.findLast((a) => a.weight > 0) ?? rollout.arms[rollout.arms.length - 1]
  return { variant: last.variant, version: last.version, by: 'sticky' }
}

/** Versions a client may pin: the listed ones and every arm's. */
export const pinnable = (rollout: Rollout): Set<number> => new Set([...rollout.pinnable, ...rollout.arms.map((a) => a.version)])

/** Whether this request also goes to the shadow version (decided on the same sticky key). */
export const inShadow = (rollout: Rollout, key: string): boolean =>
  rollout.shadow !== undefined && stickyBucket(`${rollout.salt}:shadow`, key) < (rollout.shadow.percent / 100) * BUCKETS
