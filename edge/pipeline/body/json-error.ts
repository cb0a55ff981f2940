/**
 * Where a JSON text first goes wrong. `JSON.parse` messages differ between engines and versions
 * (V8 in Node 20 often names no position, and quotes the input), so a malformed body is scanned
 * once more here, iteratively (a deeply nested body cannot overflow the stack). Only used after
 * `JSON.parse` has already failed.
 */
export interface JsonSyntaxError {
  /** Offset in UTF-16 code units (what `String.prototype.slice` counts). */
  position: number
  line: number
  column: number
  reason: string
}

const WS = new Set([' ', '\t', '\n', '\r'])
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't'])
const HEX = /^[0-9A-Fa-f]{4}$/

type Scan = { end: number } | { at: number; reason: string }

const show = (ch: string) => (ch < ' ' ? `U+${ch.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}` : JSON.stringify(ch))

const scanString = (text: string, start: number): Scan => {
  for (let i = start + 1; i < text.length; i++) {
    const ch = text[i]
    if (ch === '"') return { end: i + 1 }
    if (ch < ' ') return { at: i, reason: `unescaped control character ${show(ch)} in a string` }
    if (ch === '\\') {
      const next = text[i + 1]
      if (next === undefined) break
      if (next === 'u') {
        if (!HEX.test(text.slice(i + 2, i + 6))) return { at: i, reason: 'invalid \\u escape in a string' }
        i += 5
      } else if (ESCAPES.has(next)) i++
      else return { at: i, reason: `invalid escape \\${next} in a string` }
    }
  }
  return { at: text.length, reason: 'unterminated string' }
}

const scanNumber = (text: string, start: number): Scan => {
  let i = start
  const digits = () => {
    const from = i
    while (i < text.length && text[i] >= '0' && text[i] <= '9') i++
    return i - from
  }
  if (text[i] === '-') i++
  if (text[i] === '0') i++
  else if (digits() === 0) return { at: i, reason: 'expected a digit' }
  if (text[i] === '.') {
    i++
    if (digits() === 0) return { at: i, reason: 'expected a digit after the decimal point' }
  }
  if (text[i] === 'e' || text[i] === 'E') {
    i++
    if (text[i] === '+' || text[i] === '-') i++
    if (digits() === 0) return { at: i, reason: 'expected a digit in the exponent' }
  }
  return { end: i }
}

const scanValue = (text: string, i: number): Scan => {
  const ch = text[i]
  if (ch === '"') return scanString(text, i)
  if (ch === '-' || (ch >= '0' && ch <= '9')) return scanNumber(text, i)
  for (const word of ['true', 'false', 'null']) {
    if (ch !== word[0]) continue
    for (let k = 1; k < word.length; k++) {
      if (text[i + k] !== word[k]) return { at: i + k, reason: i + k >= text.length ? 'unexpected end of input' : `unexpected character ${show(text[i + k])}` }
    }
    return { end: i + word.length }
  }
  return { at: i, reason: `unexpected character ${show(ch)}, expected a value` }
}

const at = (text: string, position: number, reason: string): JsonSyntaxError => {
  const before = text.slice(0, position)
  const line = before.split('\n').length
  return { position, line, column: position - before.lastIndexOf('\n'), reason }
}

/** The first syntax error in `text`, or `undefined` if it is valid JSON. */
export const locateJsonError = (text: string): JsonSyntaxError | undefined => {
  const stack: Array<'{' | '['> = []
  let state: 'value' | 'value-or-close' | 'key' | 'key-or-close' | 'colon' | 'after' = 'value'
  let i = 0
  for (;;) {
    while (i < text.length && WS.has(text[i])) i++
    if (i >= text.length) {
      if (state === 'after' && stack.length === 0) return undefined
      return at(text, i, text.trim() === '' ? 'the body is empty' : 'unexpected end of input')
    }
    const ch = text[i]
    switch (state) {
      case 'value':
      case 'value-or-close': {
        if (state === 'value-or-close' && ch === ']') {
          stack.pop()
          i++
          state = 'after'
        } else if (ch === '{' || ch === '[') {
          stack.push(ch)
          i++
          state = ch === '{' ? 'key-or-close' : 'value-or-close'
        } else {
          const r = scanValue(text, i)
          if ('at' in r) return at(text, r.at, r.reason)
          i = r.end
          state = 'after'
        }
        break
      }
      case 'key':
      case 'key-or-close': {
        if (state === 'key-or-close' && ch === '}') {
          stack.pop()
          i++
          state = 'after'
          break
        }
        if (ch !== '"') return at(text, i, `unexpected character ${show(ch)}, expected a property name in double quotes`)
        const r = scanString(text, i)
        if ('at' in r) return at(text, r.at, r.reason)
        i = r.end
        state = 'colon'
        break
      }
      case 'colon':
        if (ch !== ':') return at(text, i, `unexpected character ${show(ch)}, expected ":"`)
        i++
        state = 'value'
        break
      case 'after': {
        const top = stack.at(-1)
        if (top === undefined) return at(text, i, `unexpected character ${show(ch)} after the end of the JSON value`)
        const close = top === '{' ? '}' : ']'
        if (ch === ',') {
          i++
          state = top === '{' ? 'key' : 'value'
        } else if (ch === close) {
          stack.pop()
          i++
        } else return at(text, i, `unexpected character ${show(ch)}, expected "," or "${close}"`)
        break
      }
    }
  }
}

/** Parses a request body, or explains where it is not JSON. */
export const parseJsonBody = (text: string): { ok: true; value: unknown } | { ok: false; error: JsonSyntaxError } => {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  try {
    return { ok: true, value: JSON.parse(body) }
  } catch (err) {
    const located = locateJsonError(body)
    if (located) return { ok: false, error: located }
    const m = /position (\d+)/.exec((err as Error).message)
    return { ok: false, error: at(body, m ? Number(m[1]) : 0, 'not valid JSON') }
  }
}
