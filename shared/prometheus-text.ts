/** One sample line of a Prometheus text exposition (format 0.0.4). */
export interface PrometheusSample {
  name: string
  labels: Record<string, string>
  /** ±Infinity for `+Inf`/`-Inf`, NaN for `NaN`. */
  value: number
  /** Milliseconds since the epoch, when the line carries a timestamp. */
  timestampMs?: number
}

const NAME = /[a-zA-Z_:][a-zA-Z0-9_:]*/y
const LABEL_NAME = /[a-zA-Z_][a-zA-Z0-9_]*/y
const ESCAPED: Readonly<Record<string, string>> = { '\\': '\\', '"': '"', n: '\n' }

/** Go's ParseFloat spellings the format allows, which `Number` does not read. */
const parseValue = (text: string): number => {
  if (/^[+-]?inf$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity
  if (/^nan$/i.test(text)) return Number.NaN
  const value = text === '' ? Number.NaN : Number(text)
  if (Number.isNaN(value)) throw new Error(`not a sample value: ${JSON.stringify(text)}`)
  return value
}

/** Reads one line from its start; a label value may hold `}`, `,` and escaped quotes, so it is scanned, not matched. */
const parseSample = (line: string): PrometheusSample => {
  let at = 0
  const take = (pattern: RegExp, what: string): string => {
    pattern.lastIndex = at
    const match = pattern.exec(line)
    if (!match) throw new Error(`expected ${what} at column ${at + 1}`)
    at = pattern.lastIndex
    return match[0]
  }
  const skipSpace = () => {
    while (line[at] === ' ' || line[at] === '\t') at++
  }
  const expect = (char: string) => {
    if (line[at] !== char) throw new Error(`expected ${char} at column ${at + 1}`)
    at++
  }
  const name = take(NAME, 'a metric name')
  const labels: Record<string, string> = {}
  skipSpace()
  if (line[at] === '{') {
    at++
    skipSpace()
    while (line[at] !== '}') {
      const label = take(LABEL_NAME, 'a label name')
      skipSpace()
      expect('=')
      skipSpace()
      expect('"')
      let value = ''
      for (;;) {
        const char = line[at++]
        if (char === undefined) throw new Error(`unterminated value of label ${label}`)
        if (char === '"') break
        if (char !== '\\') value += char
        else {
          const next = line[at++]
          // The format defines three escapes; any other backslash stands for itself, as Prometheus reads it.
          value += next !== undefined && Object.hasOwn(ESCAPED, next) ? ESCAPED[next] : `\\${next ?? ''}`
        }
      }
      labels[label] = value
      skipSpace()
      if (line[at] === ',') at++
      else if (line[at] !== '}') throw new Error(`expected , or } at column ${at + 1}`)
      skipSpace()
    }
    at++
  }
  const [value, timestamp, ...rest] = line.slice(at).trim().split(/[ \t]+/)
  if (rest.length > 0) throw new Error(`unexpected ${JSON.stringify(rest.join(' '))} after the timestamp`)
  const sample: PrometheusSample = { name, labels, value: parseValue(value ?? '') }
  if (timestamp !== undefined) {
    if (!/^-?\d+$/.test(timestamp)) throw new Error(`not a timestamp: ${JSON.stringify(timestamp)}`)
    sample.timestampMs = Number(timestamp)
  }
  return sample
}

/**
 * The samples of a Prometheus text exposition, in order; blank lines, `# HELP`, `# TYPE` and other
 * comments are skipped. Throws on a line that is not a sample, naming its line number.
 */
export const parsePrometheusText = (text: string): PrometheusSample[] => {
  const samples: PrometheusSample[] = []
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    try {
      samples.push(parseSample(line))
    } catch (err) {
      throw new Error(`Prometheus text line ${i + 1}: ${err instanceof Error ? err.message : String(err)}`)
    }
  })
  return samples
}
