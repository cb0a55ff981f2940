import { describe, expect, it } from 'vitest'
import { describeValue, formatPath } from '../../edge/format.ts'

describe('what messages quote of client input', () => {
  it('cuts a long key in a path, saying how long it was', () => {
    const path = formatPath(['instances', 0, 'f'.repeat(100_000)])
    expect(path).toBe(`instances[0][${JSON.stringify(`${'f'.repeat(200)}…`)} (cut, 100000 characters)]`)
  })

  it('keeps short keys as they are', () => {
    expect(formatPath(['instances', 3, 'age'])).toBe('instances[3].age')
    expect(formatPath(['instances', 0, 'a b'])).toBe('instances[0]["a b"]')
  })

  it('cuts a long value, saying how long it was', () => {
    expect(describeValue('v'.repeat(5000))).toBe(`"${'v'.repeat(200)}…" (cut, 5000 characters)`)
    expect(describeValue('north')).toBe('"north"')
  })
})
