import { describe, expect, it } from 'vitest'
import { randomHex, randomUuid } from '../../edge/random-ids.ts'

describe('pooled random ids', () => {
  it('spells RFC 9562 version 4 UUIDs', () => {
    for (let i = 0; i < 1000; i++) expect(randomUuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })

  it('never hands out the same bytes twice, across pool refills', () => {
    // 20,000 × 8 bytes spans dozens of 4 KiB pools: a slice served twice would repeat an id.
    const ids = new Set(Array.from({ length: 20_000 }, () => randomHex(8)))
    expect(ids.size).toBe(20_000)
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/)
  })

  it('uses every byte value (hex of the whole byte, not a nibble)', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 4000; i++) seen.add(randomHex(1))
    expect(seen.size).toBe(256)
  })
})
