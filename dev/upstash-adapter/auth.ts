import { createHash, timingSafeEqual } from 'node:crypto'

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest()

/**
 * Checks `Authorization: Bearer <token>` in constant time: both sides are hashed first, so
 * neither the token's content nor its length shows in the comparison time.
 */
export const bearerChecker = (token: string): ((authorization: string | undefined) => boolean) => {
  if (token === '') throw new Error('the Upstash adapter needs a non-empty token')
  const expected = digest(token)
  return (authorization) => {
    const match = /^Bearer\s+(.+)$/i.exec(authorization ?? '')
    const given = digest(match?.[1]?.trim() ?? '')
    return timingSafeEqual(given, expected) && match !== null
  }
}
