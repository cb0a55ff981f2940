/**
 * Request, trace and span ids from one pooled draw of the platform CSPRNG. A `getRandomValues`
 * call per id was a measurable share of the pipeline's cost; ids are identifiers, not secrets,
 * so handing out consecutive slices of one draw loses nothing.
 */
const POOL_BYTES = 4096
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'))

let pool = new Uint8Array(0)
let next = 0

/** Offset in `pool` of `bytes` fresh random bytes. */
const take = (bytes: number): number => {
  if (next + bytes > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(POOL_BYTES))
    next = 0
  }
  const at = next
  next += bytes
  return at
}

const hexOf = (at: number, bytes: number): string => {
  let hex = ''
  for (let i = at; i < at + bytes; i++) hex += HEX[pool[i]]
  return hex
}

export const randomHex = (bytes: number): string => hexOf(take(bytes), bytes)

/** An RFC 9562 version 4 UUID. */
export const randomUuid = (): string => {
  const at = take(16)
  pool[at + 6] = (pool[at + 6] & 0x0f) | 0x40
  pool[at + 8] = (pool[at + 8] & 0x3f) | 0x80
  return `${hexOf(at, 4)}-${hexOf(at + 4, 2)}-${hexOf(at + 6, 2)}-${hexOf(at + 8, 2)}-${hexOf(at + 10, 6)}`
}
