import { Miniflare, convertV4MiniflareOptions } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RateLimitBinding } from '../../../../edge/bindings.ts'
import { BindingRateLimiters } from '../../../../edge/stores/limits/binding.ts'
import { Problem } from '../../../../edge/problem.ts'

/** The `[[ratelimits]]` binding as workerd runs it locally: Miniflare's simulation, reached from Node. */
const LIMIT = 3
const PERIOD_S = 10
let mf: Miniflare
let binding: RateLimitBinding

beforeAll(async () => {
  mf = new Miniflare(convertV4MiniflareOptions({
    modules: true,
    script: 'export default { fetch: () => new Response(null, { status: 204 }) }',
    ratelimits: { RATE_LIMIT_TEST: { namespace_id: '9101', simple: { limit: LIMIT, period: PERIOD_S } } },
  }))
  binding = (await mf.getBindings<{ RATE_LIMIT_TEST: RateLimitBinding }>()).RATE_LIMIT_TEST
})

afterAll(async () => {
  await mf?.dispose()
})

const collect = () => {
  const lines: Array<Record<string, unknown>> = []
  return { lines, log: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }
}

/**
 * LIMIT + 1 checks of `id`, retried under a fresh id when they straddled one of the binding's
 * windows (the simulation counts in windows aligned to the wall clock).
 */
const burst = async (limiters: BindingRateLimiters, id: string): Promise<boolean[]> => {
  for (let attempt = 0; ; attempt++) {
    const window = () => Math.floor(Date.now() / (PERIOD_S * 1000))
    const first = window()
    const answers: boolean[] = []
    for (let i = 0; i <= LIMIT; i++) answers.push(await limiters.limit('RATE_LIMIT_TEST', `${id}-${attempt}`))
    if (window() === first || attempt === 2) return answers
  }
}

describe('BindingRateLimiters on a [[ratelimits]] binding (Miniflare)', () => {
  it("admits the binding's limit per id, then refuses; ids are counted apart", async () => {
    const limiters = new BindingRateLimiters({ RATE_LIMIT_TEST: binding })
    expect(await burst(limiters, 'a')).toEqual([true, true, true, false])
    expect(await burst(limiters, 'b')).toEqual([true, true, true, false])
  })

  it('refuses a binding the worker lacks (or a var of that name) with a 503 problem, told once per name', async () => {
    const { lines, log } = collect()
    const limiters = new BindingRateLimiters({ RATE_LIMIT_TEXT: 'not a binding' }, { log })
    for (const name of ['RATE_LIMIT_NONE', 'RATE_LIMIT_NONE', 'RATE_LIMIT_TEXT'] as const) {
      const refusal = await limiters.limit(name, 'a').catch((error: unknown) => error)
      expect(refusal).toBeInstanceOf(Problem)
      expect(refusal).toMatchObject({ status: 503, type: 'https://edge-infer.dev/problems/rate-limit-misconfigured' })
    }
    expect(lines.map((line) => line.binding)).toEqual(['RATE_LIMIT_NONE', 'RATE_LIMIT_TEXT'])
    expect(lines[0]).toMatchObject({ level: 'error', msg: expect.stringContaining('add a [[ratelimits]] entry named RATE_LIMIT_NONE to wrangler.toml') })
  })

  it('admits while a binding fails, told once at the start of the spell and once at its end', async () => {
    const { lines, log } = collect()
    // A stand-in for an outage of Cloudflare's rate limiting: Miniflare's binding does not fail.
    const outage = { failing: true }
    const flaky: RateLimitBinding = { limit: async (options) => (outage.failing ? Promise.reject(new Error('rate limiter unavailable')) : binding.limit(options)) }
    const limiters = new BindingRateLimiters({ RATE_LIMIT_TEST: flaky }, { log })
    for (let i = 0; i < LIMIT + 2; i++) expect(await limiters.limit('RATE_LIMIT_TEST', 'flaky')).toBe(true)
    outage.failing = false
    expect(await limiters.limit('RATE_LIMIT_TEST', 'flaky')).toBe(true)
    expect(lines).toEqual([
      { level: 'warn', msg: 'a rate-limit binding failed; its keys are admitted until it answers again', binding: 'RATE_LIMIT_TEST', error: 'rate limiter unavailable' },
      { level: 'info', msg: 'rate-limit bindings answer again', binding: 'RATE_LIMIT_TEST' },
    ])
  })
})
