import { describe, expect, it } from 'vitest'
import { CircuitBreaker } from '../../../edge/backend-client/circuit-breaker.ts'
import { HttpTransport } from '../../../edge/backend-client/http.ts'
import { manualClock } from '../pipeline/enrich/support.ts'
import { random } from '../pipeline/validate/fixtures.ts'

/** Everything one attempt to reach the backend can end in. */
const OUTCOMES = ['ok', 'ok', 'not-ready-503', 'error-500', 'busy-429', 'unknown-404', 'late-504', 'refused', 'timeout', 'abort', 'throws'] as const
type Outcome = (typeof OUTCOMES)[number]

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

/** What the backend (or the network) does with one attempt. */
const settle = (outcome: Outcome): Response => {
  switch (outcome) {
    case 'ok': return json(200, { model_name: 'm', id: 'p', parameters: {}, outputs: [] })
    case 'not-ready-503': return json(503, { error: 'model "m" version 1 is not ready: warming up' })
    case 'error-500': return json(500, { error: 'session failed' })
    case 'busy-429': return json(429, { error: 'queue full' })
    case 'unknown-404': return json(404, { error: 'unknown model' })
    case 'late-504': return json(504, { error: 'deadline expired in queue' })
    case 'refused': throw new TypeError('fetch failed')
    case 'timeout': throw new DOMException('The operation was aborted due to timeout', 'TimeoutError')
    case 'abort': throw new DOMException('This operation was aborted', 'AbortError')
    case 'throws': throw new Error('socket hang up')
  }
}

interface HeldAttempt {
  /** The breaker's state just before the attempt went out: anything but closed makes it a probe. */
  probe: boolean
  resolve: (outcome: Outcome) => void
}

/**
 * One random history: a backend whose every attempt ends in a random outcome, a clock that jumps
 * by random steps, calls one at a time and in concurrent bursts.
 */
const run = async (seed: number, steps: number) => {
  const rng = random(seed)
  const clock = manualClock()
  const cooldownMs = rng.int(50, 5_000)
  const breaker = new CircuitBreaker({ failureThreshold: rng.int(1, 4), cooldownMs, now: clock.now })
  const held: HeldAttempt[] = []
  let attempts = 0
  let probesOut = 0
  let maxProbesOut = 0
  let hold = false
  let answeredOk = false
  const fetcher: typeof fetch = (input) => {
    attempts++
    const probe = breaker.state !== 'closed'
    if (probe) maxProbesOut = Math.max(maxProbesOut, ++probesOut)
    const answer = (outcome: Outcome): Response => {
      if (probe) probesOut--
      if (outcome === 'ok') answeredOk = true
      return settle(outcome)
    }
    if (!hold) {
      const outcome = rng.pick(OUTCOMES)
      // A fetch that throws before returning a promise, as a broken stub or polyfill may.
      if (outcome === 'throws' && rng.next() < 0.5) {
        if (probe) probesOut--
        throw new Error('fetch is not a function')
      }
      return Promise.resolve().then(() => answer(outcome))
    }
    return new Promise<Response>((resolve, reject) => {
      held.push({ probe, resolve: (outcome) => { try { resolve(answer(outcome)) } catch (err) { reject(err) } } })
    })
  }
  const transport = new HttpTransport({ baseUrl: `http://backend-${seed}`, retries: rng.int(0, 2), breakers: () => breaker, fetch: fetcher, now: clock.now })
  const call = () => transport.infer({ model: 'm', version: 1, request: { inputs: [] }, requestId: `seed-${seed}`, deadlineAt: clock.now() + 60_000 }).catch(() => undefined)
  const where = (step: number) => `seed ${seed}, step ${step}`

  for (let step = 0; step < steps; step++) {
    clock.advance(rng.pick([0, 0, 1, Math.floor(cooldownMs / 2), cooldownMs, 2 * cooldownMs]))
    const before = breaker.state
    const attemptsBefore = attempts
    answeredOk = false
    if (rng.next() < 0.25) {
      hold = true
      const calls = Promise.all(Array.from({ length: rng.int(2, 5) }, call))
      let settled = false
      void calls.then(() => (settled = true))
      // Answer the held attempts in random order; retries join the queue until every call is done.
      for (let turn = 0; !settled; turn++) {
        expect(turn, `${where(step)}: a burst of calls never settled`).toBeLessThan(1_000)
        await new Promise((resolve) => setImmediate(resolve))
        if (held.length > 0) held.splice(rng.int(0, held.length - 1), 1)[0].resolve(rng.pick(OUTCOMES))
      }
      hold = false
    } else {
      await call()
      // A call ends with its first 200: whatever failed before it, the circuit is closed after it.
      if (answeredOk) expect(breaker.state, `${where(step)}: an attempt answered 200 but the circuit did not close`).toBe('closed')
    }
    expect(maxProbesOut, `${where(step)}: more than one probe out at a time`).toBeLessThanOrEqual(1)
    expect(breaker.state, `${where(step)}: still probing after every call has its answer`).not.toBe('probing')
    if (before === 'half-open') expect(attempts, `${where(step)}: a half-open circuit let no probe through`).toBeGreaterThan(attemptsBefore)
  }

  // The backend has recovered: after one cooldown the first call goes out and closes the circuit.
  clock.advance(cooldownMs)
  const recovered = new HttpTransport({ baseUrl: `http://backend-${seed}`, breakers: () => breaker, fetch: async () => settle('ok'), now: clock.now })
  const answer = await recovered.infer({ model: 'm', version: 1, request: { inputs: [] }, requestId: `seed-${seed}`, deadlineAt: clock.now() + 60_000 }).catch((err: unknown) => err)
  expect(answer, `seed ${seed}: refused after the backend recovered`).toMatchObject({ model_name: 'm' })
  expect(breaker.state, `seed ${seed}: the circuit stayed open after the backend recovered`).toBe('closed')
}

describe('CircuitBreaker behind HttpTransport, over random histories', () => {
  it('always lets one probe through once the cooldown is over, one at a time, and closes when it succeeds', async () => {
    for (let seed = 1; seed <= 60; seed++) await run(seed, 100)
  })
})
