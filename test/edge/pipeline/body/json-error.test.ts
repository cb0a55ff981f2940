import { describe, expect, it } from 'vitest'
import { locateJsonError, parseJsonBody } from '../../../../edge/pipeline/body/json-error.ts'

describe('locateJsonError', () => {
  it.each([
    ['{"a":}', 5, 'unexpected character "}", expected a value'],
    ['{"a":1', 6, 'unexpected end of input'],
    ['[1,]', 3, 'unexpected character "]", expected a value'],
    ['{"a" 1}', 5, 'unexpected character "1", expected ":"'],
    ["{'a':1}", 1, `unexpected character "'", expected a property name in double quotes`],
    ['{"a":1,}', 7, 'unexpected character "}", expected a property name in double quotes'],
    ['{"a":01}', 6, 'unexpected character "1", expected "," or "}"'],
    ['{"a":nul}', 8, 'unexpected character "}"'],
    ['{"a":"x\ty"}', 7, 'unescaped control character U+0009 in a string'],
    ['{"a":"\\q"}', 6, 'invalid escape \\q in a string'],
    ['{"a":1} x', 8, 'unexpected character "x" after the end of the JSON value'],
    ['{"a":-}', 6, 'expected a digit'],
    ['{"a":1.}', 7, 'expected a digit after the decimal point'],
    ['', 0, 'the body is empty'],
    ['{"a":"abc', 9, 'unterminated string'],
  ])('%j fails at %i', (text, position, reason) => {
    expect(() => JSON.parse(text)).toThrow()
    expect(locateJsonError(text)).toMatchObject({ position, reason })
  })

  it('gives line and column', () => {
    expect(locateJsonError('{\n  "a": 1,\n  "b": ]\n}')).toEqual({ position: 19, line: 3, column: 8, reason: 'unexpected character "]", expected a value' })
  })

  it('agrees that valid JSON is valid, and survives deep nesting', () => {
    for (const text of ['{}', '[]', ' {"a":[1,-2.5e+3,true,false,null,"\\u00e9\\n"],"b":{}} ', '"s"', '0']) expect(locateJsonError(text)).toBeUndefined()
    expect(locateJsonError('['.repeat(100_000))).toMatchObject({ position: 100_000, reason: 'unexpected end of input' })
  })

  it('parseJsonBody parses, tolerates a leading BOM, and locates failures', () => {
    expect(parseJsonBody('\uFEFF{"a":1}')).toEqual({ ok: true, value: { a: 1 } })
    expect(parseJsonBody('{"a":}')).toMatchObject({ ok: false, error: { position: 5, line: 1, column: 6 } })
  })
})
