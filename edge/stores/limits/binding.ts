import type { RateLimitBinding, RateLimitBindingName } from '../../bindings.ts'
import { Problem } from '../../problem.ts'
import { messageOf } from '../../format.ts'

export interface BindingLimitersOptions {
  /** Where a missing binding and a failing one are told (the Workers console by default). */
  log?: (line: string) => void
}

const isBinding = (value: unknown): value is RateLimitBinding =>
  typeof value === 'object' && value !== null && typeof (value as { limit?: unknown }).limit === 'function'

/**
 * Keys limited by Cloudflare's Rate Limiting bindings (`[[ratelimits]]`): the binding counts in the
 * Cloudflare location that serves the request, with no round trip from the worker, at the limit
 * and period of its `simple` block. It answers only whether the call is within them: no remaining
 * count, no reset time.
 *
 * A key naming a binding the worker does not have is a configuration error: 503 (told once per
 * name), never an unlimited key. A binding that throws admits the request (told once per spell):
 * the binding is an approximate limit, and an outage of it must not become an outage of the API.
 */
export class BindingRateLimiters {
  readonly #env: object
  readonly #log: (line: string) => void
  readonly #missingTold = new Set<string>()
  #failing = false

  /** `env`: the worker's bindings, where each `[[ratelimits]]` binding is found by its name. */
  constructor(env: object, { log = console.error }: BindingLimitersOptions = {}) {
    this.#env = env
    this.#log = log
  }

  /** Whether `id` may make one more request under `name`. */
  async limit(name: RateLimitBindingName, id: string): Promise<boolean> {
    const binding: unknown = (this.#env as Partial<Record<string, unknown>>)[name]
    if (!isBinding(binding)) throw this.#missing(name)
    let outcome: { success: boolean }
    try {
      outcome = await binding.limit({ key: id })
    } catch (error) {
      if (!this.#failing) this.#log(JSON.stringify({ level: 'warn', msg: 'a rate-limit binding failed; its keys are admitted until it answers again', binding: name, error: messageOf(error) }))
      this.#failing = true
      return true
    }
    if (this.#failing) this.#log(JSON.stringify({ level: 'info', msg: 'rate-limit bindings answer again', binding: name }))
    this.#failing = false
    return outcome.success
  }

  #missing(name: RateLimitBindingName): Problem {
    if (!this.#missingTold.has(name)) {
      this.#missingTold.add(name)
      this.#log(JSON.stringify({ level: 'error', msg: `an API key names the rate-limit binding ${name}, which this worker does not have: add a [[ratelimits]] entry named ${name} to wrangler.toml (in this environment), or change the key's rate_limit; its requests get 503 until then`, binding: name }))
    }
    return new Problem(503, 'Service Unavailable', 'rate limiting is not configured correctly on this edge; the operator has been told', { slug: 'rate-limit-misconfigured' })
  }
}
