import { describe, expect, it } from 'vitest'
import { CachedFeatureStore } from '../../../../edge/stores/features/cached.ts'
import { CircuitBreaker } from '../../../../edge/backend-client/circuit-breaker.ts'
import { flush, manualClock, manualTimers, scriptedStore } from '../../pipeline/enrich/support.ts'

const setup = (options: ConstructorParameters<typeof CachedFeatureStore>[1] = {}) => {
  const clock = manualClock()
  const timers = manualTimers()
  const backing = scriptedStore({
    'user:u-1': { account_age_months: '48', num_products: '3' },
    'user:u-2': { account_age_months: '6' },
    'user:u-3': { account_age_months: '132' },
  })
  const cache = new CachedFeatureStore(backing.store, { now: clock.now, setTimer: timers.setTimer, ttlMs: 1_000, missTtlMs: 100, maxStaleMs: 10_000, ...options })
  return { clock, timers, backing, cache }
}

describe('CachedFeatureStore', () => {
  it('reads through to the store once, then serves from the cache until the TTL runs out', async () => {
    const { clock, backing, cache } = setup()
    expect(await cache.read('user', 'u-1')).toEqual({ values: { account_age_months: '48', num_products: '3' }, found: true, source: 'store', degraded: false })
    clock.advance(999)
    expect(await cache.read('user', 'u-1')).toMatchObject({ source: 'cache', degraded: false, values: { account_age_months: '48' } })
    expect(backing.calls).toEqual(['user:u-1'])
    clock.advance(1)
    backing.data['user:u-1'] = { account_age_months: '49' }
    expect(await cache.read('user', 'u-1')).toMatchObject({ source: 'store', values: { account_age_months: '49' } })
    expect(backing.calls).toEqual(['user:u-1', 'user:u-1'])
  })

  it('caches an unknown entity for the (shorter) miss TTL; it is not degraded', async () => {
    const { clock, backing, cache } = setup()
    expect(await cache.read('user', 'nobody')).toEqual({ values: {}, found: false, source: 'store', degraded: false })
    expect(await cache.read('user', 'nobody')).toEqual({ values: {}, found: false, source: 'cache', degraded: false })
    clock.advance(100)
    expect(await cache.read('user', 'nobody')).toMatchObject({ source: 'store', found: false })
    expect(backing.calls).toEqual(['user:nobody', 'user:nobody'])
  })

  it('keeps at most maxEntries, evicting the least recently used', async () => {
    const { backing, cache } = setup({ maxEntries: 2 })
    await cache.read('user', 'u-1')
    await cache.read('user', 'u-2')
    await cache.read('user', 'u-1') // u-1 is now the most recently used
    await cache.read('user', 'u-3') // evicts u-2
    expect(cache.stats().size).toBe(2)
    expect(await cache.read('user', 'u-1')).toMatchObject({ source: 'cache' })
    expect(await cache.read('user', 'u-3')).toMatchObject({ source: 'cache' })
    expect(await cache.read('user', 'u-2')).toMatchObject({ source: 'store' })
    expect(backing.calls).toEqual(['user:u-1', 'user:u-2', 'user:u-3', 'user:u-2'])
  })

  it('serves an expired entry, marked stale and degraded, when the store fails; nothing once past maxStaleMs', async () => {
    const { clock, backing, cache } = setup()
    await cache.read('user', 'u-1')
    clock.advance(1_000)
    backing.state.mode = 'fail'
    expect(await cache.read('user', 'u-1')).toEqual({ values: { account_age_months: '48', num_products: '3' }, found: true, source: 'stale', degraded: true })
    clock.advance(9_999)
    expect(await cache.read('user', 'u-1')).toMatchObject({ source: 'stale', degraded: true })
    clock.advance(1)
    expect(await cache.read('user', 'u-1')).toEqual({ values: {}, found: false, source: 'none', degraded: true })
    expect(cache.stats()).toMatchObject({ stale: 2, none: 1, errors: 3 })
  })

  it('a store that throws synchronously counts as a failure, not a crash', async () => {
    const { backing, cache } = setup()
    backing.state.mode = 'throw'
    expect(await cache.read('user', 'u-1')).toEqual({ values: {}, found: false, source: 'none', degraded: true })
  })

  it('gives up on a read when its time budget runs out, and keeps the late answer for later', async () => {
    const { backing, cache, timers } = setup({ timeoutMs: 25 })
    backing.state.mode = 'hang'
    const reading = cache.read('user', 'u-1')
    await flush()
    expect(timers.pending).toBe(1)
    timers.fireAll() // the 25 ms budget is over
    expect(await reading).toEqual({ values: {}, found: false, source: 'none', degraded: true })
    expect(cache.stats()).toMatchObject({ timeouts: 1, none: 1 })
    // The store answers late: the answer is cached for the next request.
    backing.hanging[0].resolve({ account_age_months: '48' })
    await flush()
    expect(await cache.read('user', 'u-1')).toMatchObject({ source: 'cache', degraded: false, values: { account_age_months: '48' } })
  })

  it('a timed-out read of an expired entry serves it stale', async () => {
    const { clock, backing, cache, timers } = setup()
    await cache.read('user', 'u-1')
    clock.advance(5_000)
    backing.state.mode = 'hang'
    const reading = cache.read('user', 'u-1')
    await flush()
    timers.fireAll()
    expect(await reading).toMatchObject({ source: 'stale', degraded: true, values: { account_age_months: '48' } })
  })

  it('an answer in time cancels the budget timer', async () => {
    const { cache, timers } = setup()
    await cache.read('user', 'u-1')
    expect(timers.pending).toBe(0)
  })

  it('opens the circuit after repeated failures and stops calling the store; one probe after the cooldown closes it', async () => {
    const { clock, backing } = setup()
    const breaker = new CircuitBreaker({ failureThreshold: 3, cooldownMs: 5_000, now: clock.now })
    const guarded = new CachedFeatureStore(backing.store, { now: clock.now, breaker, setTimer: manualTimers().setTimer })
    backing.state.mode = 'fail'
    for (let i = 0; i < 3; i++) expect(await guarded.read('user', 'u-1')).toMatchObject({ source: 'none', degraded: true })
    expect(breaker.state).toBe('open')
    expect(backing.calls).toHaveLength(3)
    for (let i = 0; i < 10; i++) expect(await guarded.read('user', `u-${i}`)).toMatchObject({ source: 'none', degraded: true })
    expect(backing.calls).toHaveLength(3) // not hammered while open
    expect(guarded.stats().shortCircuited).toBe(10)

    clock.advance(5_000) // half-open: one probe goes out
    backing.state.mode = 'answer'
    expect(await guarded.read('user', 'u-1')).toMatchObject({ source: 'store', degraded: false })
    expect(breaker.state).toBe('closed')
    expect(await guarded.read('user', 'u-2')).toMatchObject({ source: 'store' })
    expect(backing.calls).toHaveLength(5)
  })

  it('a failed probe opens the circuit again', async () => {
    const { clock, backing } = setup()
    const breaker = new CircuitBreaker({ failureThreshold: 2, cooldownMs: 1_000, now: clock.now })
    const cache = new CachedFeatureStore(backing.store, { now: clock.now, breaker })
    backing.state.mode = 'fail'
    await cache.read('user', 'u-1')
    await cache.read('user', 'u-1')
    clock.advance(1_000)
    await cache.read('user', 'u-1') // the probe fails
    expect(breaker.state).toBe('open')
    await cache.read('user', 'u-1')
    expect(backing.calls).toHaveLength(3)
  })

  it('timeouts count towards the breaker, like errors', async () => {
    const { clock, backing, timers } = setup()
    const breaker = new CircuitBreaker({ failureThreshold: 2, cooldownMs: 1_000, now: clock.now })
    const cache = new CachedFeatureStore(backing.store, { now: clock.now, breaker, setTimer: timers.setTimer })
    backing.state.mode = 'hang'
    for (let i = 0; i < 2; i++) {
      const reading = cache.read('user', 'u-1')
      await flush()
      timers.fireAll()
      await reading
    }
    expect(breaker.state).toBe('open')
    await cache.read('user', 'u-1')
    expect(backing.calls).toHaveLength(2)
  })

  it('hands out values the caller cannot corrupt', async () => {
    const { cache } = setup()
    const first = await cache.read('user', 'u-1')
    expect(() => {
      ;(first.values as Record<string, string>).account_age_months = '0'
    }).toThrow()
    expect((await cache.read('user', 'u-1')).values.account_age_months).toBe('48')
  })

  it('invalidate() forces the next read to the store', async () => {
    const { backing, cache } = setup()
    await cache.read('user', 'u-1')
    cache.invalidate('user', 'u-1')
    expect(await cache.read('user', 'u-1')).toMatchObject({ source: 'store' })
    expect(backing.calls).toHaveLength(2)
  })
})
