import type { Redis } from '@upstash/redis'
import { RedisTimeout, within } from './upstash-client.ts'

/**
 * The project's one rule for counted writes to Redis (both tiers):
 *
 * 1. Every write that adds, marks or records carries an id, and the same script that applies it
 *    checks that id first (`once:{id}`, set NX beside the write): a write applies at most once.
 * 2. A write whose answer did not come within its budget is in doubt, not failed: it may still
 *    land. The caller keeps it whole (same id, same commands) and sends it again; the id makes the
 *    resend a no-op if the first attempt landed. Nothing new is merged into a write in doubt.
 * 3. Only an answer ends a write: `applied` or `already applied` both mean "counted once". Any
 *    other failure (a refused connection, a reset, an error reply) is resent the same way: with
 *    the id, a resend is always safe, so callers need not tell "not applied" from "unknown".
 */
export class WriteInDoubt extends Error {
  constructor(readonly writeId: string, readonly ms: number) {
    super(`no answer from Redis within ${ms} ms for write ${writeId}; it may still be applied`)
    this.name = 'WriteInDoubt'
  }
}

/** One Redis command as strings, e.g. `['HINCRBY', key, field, '3']`. */
export type RedisCommand = readonly string[]

/** How long an applied write's id is remembered (one day: longer than any resend goes on). */
export const WRITE_ID_TTL_SECONDS = 86_400

export const writeIdKey = (id: string): string => `once:${id}`

/**
 * KEYS[1] the id's key; ARGV[1] its TTL; ARGV[2] the commands as a JSON array of string arrays.
 * Returns 1 when this call applied them, 0 when the id was already there. The id is set after
 * the commands: a command Redis refuses ends the script without it, so the write is not taken
 * for applied (Redis does not undo a script's earlier commands; the writers here send commands
 * that cannot be refused once the first one is accepted: HINCRBY/EXPIRE on their own hashes).
 */
const APPLY_ONCE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local commands = cjson.decode(ARGV[2])
for i = 1, #commands do redis.call(unpack(commands[i])) end
redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
return 1
`

export interface ApplyOnceOptions {
  /** Longest wait for the answer; past it the write is in doubt (`WriteInDoubt`). */
  timeoutMs: number
  ttlSeconds?: number
}

/**
 * Applies `commands` atomically, once per `writeId` however often it is sent.
 * Resolves true when this attempt applied them, false when an earlier one had; rejects with
 * `WriteInDoubt` on a timeout and with Redis's own error when Redis refused (nothing applied).
 */
export const applyOnce = async (
  redis: Redis,
  writeId: string,
  commands: readonly RedisCommand[],
  { timeoutMs, ttlSeconds = WRITE_ID_TTL_SECONDS }: ApplyOnceOptions,
): Promise<boolean> => {
  const reply = await inDoubtAfter(writeId, timeoutMs, redis.eval(APPLY_ONCE, [writeIdKey(writeId)], [String(ttlSeconds), JSON.stringify(commands)]))
  return Number(reply) === 1
}

/** `within`, with a timeout reported as the write being in doubt rather than as a failure. */
export const inDoubtAfter = <T>(writeId: string, ms: number, work: Promise<T>): Promise<T> =>
  within(work, ms).catch((error: unknown) => {
    throw error instanceof RedisTimeout ? new WriteInDoubt(writeId, ms) : error
  })

/** A fresh write id: unique across isolates, replicas and restarts. */
export const newWriteId = (prefix: string): string => `${prefix}:${crypto.randomUUID()}`

/**
 * The outgoing side of a flusher under the rule above: at most one write in flight or in doubt;
 * `next()` hands the write in doubt back (same id, same payload) until it is settled, and only
 * then takes a new payload. What is recorded meanwhile waits in the caller's own accumulator.
 */
export class OutgoingWrite<T> {
  #pending: { id: string; payload: T } | undefined

  constructor(private readonly prefix: string) {}

  /** The write to send now: the one still in doubt, or a new one from `take()` (undefined: nothing to send). */
  next(take: () => T | undefined): { id: string; payload: T } | undefined {
    if (this.#pending === undefined) {
      const payload = take()
      if (payload !== undefined) this.#pending = { id: newWriteId(this.prefix), payload }
    }
    return this.#pending
  }

  /** The write was answered (applied now or before): it is done. */
  settled(): void {
    this.#pending = undefined
  }

  /** A write waits for an answer. */
  get inDoubt(): boolean {
    return this.#pending !== undefined
  }

  /**
   * Sends the write in doubt, if any, then, once that one is answered, a new one from `take()`,
   * so what was recorded meanwhile does not wait for another flush. A send that fails leaves its
   * write in doubt for the next call, and rejects.
   */
  async sendWith(take: () => T | undefined, send: (id: string, payload: T) => Promise<unknown>): Promise<void> {
    for (let resend = this.inDoubt; ; resend = false) {
      const write = this.next(take)
      if (write === undefined) return
      await send(write.id, write.payload)
      this.settled()
      if (!resend) return
    }
  }
}
