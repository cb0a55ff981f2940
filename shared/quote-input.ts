/**
 * How both tiers quote what a client sent inside an error message. Part of the contract: the
 * edge passes the backend's `error` on inside its own problem detail, so a refusal stays small
 * at the edge only if the backend keeps the same bound.
 */

/** Most characters of a client's string an error message quotes. */
export const MAX_QUOTED_CHARACTERS = 200

/** `"north"`, or past the bound `"aaaa…" (cut, 100000 characters)`: JSON-quoted either way. */
export const quoteInput = (value: string): string =>
  value.length > MAX_QUOTED_CHARACTERS
    ? `${JSON.stringify(`${value.slice(0, MAX_QUOTED_CHARACTERS)}…`)} (cut, ${value.length} characters)`
    : JSON.stringify(value)
