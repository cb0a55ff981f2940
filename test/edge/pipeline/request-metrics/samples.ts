/** One sample line of a Prometheus text exposition. */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

/** Every sample of an exposition (comments skipped). */
export const samplesOf = (text: string): Sample[] =>
  text.split('\n').flatMap((line) => {
    const m = SAMPLE.exec(line)
    if (!m || line.startsWith('#')) return []
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(LABEL)].map((l) => [l[1], l[2]]))
    return [{ name: m[1], labels, value: Number(m[3]) }]
  })

/** The samples of `name` whose labels include `match`. */
export const matching = (samples: readonly Sample[], name: string, match: Record<string, string> = {}): Sample[] =>
  samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))

/** Sum of the matching samples' values (0 when none match). */
export const total = (samples: readonly Sample[], name: string, match: Record<string, string> = {}): number =>
  matching(samples, name, match).reduce((n, s) => n + s.value, 0)
