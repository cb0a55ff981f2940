import { describe, expect, it } from 'vitest'
import { unstable_readConfig } from 'wrangler'
import { RATE_LIMIT_BINDING_PREFIX } from '../../edge/bindings.ts'
import type { RateLimitConfig } from '../../dev/workerd.ts'

const environments = [undefined, 'staging', 'production'] as const
const ratelimitsOf = (env: string | undefined) =>
  unstable_readConfig({ config: 'wrangler.toml', ...(env ? { env } : {}) }).ratelimits as Array<RateLimitConfig & { name: string }>

describe('wrangler.toml [[ratelimits]]', () => {
  it('declares the same rate-limit tiers in every environment, so a key naming one works wherever it is deployed', () => {
    const names = environments.map((env) => ratelimitsOf(env).map((binding) => binding.name).sort())
    expect(names[0].length).toBeGreaterThan(0)
    for (const other of names.slice(1)) expect(other).toEqual(names[0])
  })

  it('names each tier with the prefix a key may name, with a period Cloudflare accepts, and a namespace of its own in the account', () => {
    const all = environments.flatMap((env) => ratelimitsOf(env))
    for (const { name, simple } of all) {
      expect(name.startsWith(RATE_LIMIT_BINDING_PREFIX), name).toBe(true)
      expect([10, 60]).toContain(simple.period)
      expect(Number.isInteger(simple.limit) && simple.limit > 0, name).toBe(true)
    }
    const namespaces = all.map((binding) => binding.namespace_id)
    expect(new Set(namespaces).size).toBe(namespaces.length)
  })
})
