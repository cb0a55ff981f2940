import { describe, expect, it } from 'vitest'
import { BUCKETS, stickyBucket } from '../../shared/sticky-hash.ts'

describe('stickyBucket', () => {
  it('is stable for a key and salt, and lies in 0..9999', () => {
    for (let i = 0; i < 1000; i++) {
      const b = stickyBucket('exp-1', `user-${i}`)
      expect(b).toBe(stickyBucket('exp-1', `user-${i}`))
      expect(b).toBeGreaterThanOrEqual(0)
      expect(b).toBeLessThan(BUCKETS)
    }
  })

  it('spreads sequential keys evenly over the buckets', () => {
    const deciles = new Array(10).fill(0)
    for (let i = 0; i < 100_000; i++) deciles[Math.floor(stickyBucket('salt', `u${i}`) / 1000)]++
    for (const n of deciles) expect(Math.abs(n - 10_000)).toBeLessThan(450)
  })

  it('hashes its parts joined by NUL, as offline analysis computes it', () => {
    expect(stickyBucket('exp-1', 'user-1')).toBe(1348)
    expect(stickyBucket('credit-risk', 'exp-1', 'user-1')).toBe(4622)
    expect(stickyBucket('credit-risk', 'exp-1', 'user-1')).toBe(stickyBucket('credit-risk\u0000exp-1', 'user-1'))
    expect(stickyBucket('fraud', 'exp-1', 'user-1')).toBe(783)
  })

  it('reshuffles users when the salt changes', () => {
    let same = 0
    for (let i = 0; i < 10_000; i++) if (Math.floor(stickyBucket('a', `u${i}`) / 5000) === Math.floor(stickyBucket('b', `u${i}`) / 5000)) same++
    expect(Math.abs(same - 5_000)).toBeLessThan(250)
  })
})
