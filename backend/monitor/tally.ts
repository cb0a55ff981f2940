/**
 * Counters and histograms for the per-request path. A series is bound once (per model version,
 * outcome or reason) and counting into it is an array add: prom-client validates and hashes the
 * label set on every `inc` and `observe`, a cost paid per request. Rendered in the Prometheus text
 * format beside the registry's own metrics.
 */

export type Labels = Readonly<Record<string, string>>

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')

/** `{name="value",…}`; a bucket's `le` goes first, where prom-client puts it. */
const labelText = (labels: Labels, le?: string): string => {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`)
  if (le !== undefined) parts.unshift(`le="${le}"`)
  return parts.length === 0 ? '' : `{${parts.join(',')}}`
}

/** Prometheus' number text: what `String` gives, with the infinities spelled its way. */
const numberText = (x: number) => (x === Infinity ? '+Inf' : x === -Infinity ? '-Inf' : String(x))

abstract class Tally<Series extends { labels: Labels }> {
  protected readonly series = new Map<string, Series>()

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly type: 'counter' | 'histogram',
    private readonly labelNames: readonly string[],
  ) {}

  /** The series of `labels`, created when first bound; every label name must be given, no other. */
  protected seriesOf(labels: Labels): Series {
    const names = Object.keys(labels)
    if (names.length !== this.labelNames.length || !this.labelNames.every((n) => Object.hasOwn(labels, n))) {
      throw new Error(`${this.name} takes the labels ${this.labelNames.join(', ')}, got ${names.join(', ')}`)
    }
    const key = this.labelNames.map((n) => labels[n]).join('\u0000')
    let series = this.series.get(key)
    if (!series) {
      series = this.create({ ...labels })
      this.series.set(key, series)
    }
    return series
  }

  protected abstract create(labels: Labels): Series
  protected abstract lines(series: Series): string[]

  render(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`]
    for (const series of this.series.values()) lines.push(...this.lines(series))
    return lines.join('\n')
  }
}

interface CounterSeries {
  labels: Labels
  value: number
}

export class TallyCounter extends Tally<CounterSeries> {
  constructor(name: string, help: string, labelNames: readonly string[]) {
    super(name, help, 'counter', labelNames)
  }

  /** A function that adds to the series of `labels` (created at 0, so it is exported before its first count). */
  bind(labels: Labels): (by?: number) => void {
    const series = this.seriesOf(labels)
    return (by = 1) => {
      series.value += by
    }
  }

  protected create(labels: Labels): CounterSeries {
    return { labels, value: 0 }
  }

  protected lines({ labels, value }: CounterSeries): string[] {
    return [`${this.name}${labelText(labels)} ${numberText(value)}`]
  }
}

interface HistogramSeries {
  labels: Labels
  /** Observations per bucket (not cumulative); the last one is above every bound. */
  counts: Float64Array
  sum: number
  count: number
}

export class TallyHistogram extends Tally<HistogramSeries> {
  private readonly bounds: Float64Array

  constructor(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]) {
    super(name, help, 'histogram', labelNames)
    if (buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= buckets[i - 1]))) throw new Error(`${name}: buckets must be finite and ascending`)
    this.bounds = Float64Array.from(buckets)
  }

  /** A function that observes a value into the series of `labels`. */
  bind(labels: Labels): (value: number) => void {
    const series = this.seriesOf(labels)
    const { bounds } = this
    return (value) => {
      if (!Number.isFinite(value)) return
      let i = 0
      while (i < bounds.length && value > bounds[i]) i++
      series.counts[i]++
      series.sum += value
      series.count++
    }
  }

  protected create(labels: Labels): HistogramSeries {
    return { labels, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }
  }

  protected lines({ labels, counts, sum, count }: HistogramSeries): string[] {
    const lines: string[] = []
    let cumulative = 0
    this.bounds.forEach((bound, i) => {
      cumulative += counts[i]
      lines.push(`${this.name}_bucket${labelText(labels, numberText(bound))} ${cumulative}`)
    })
    lines.push(`${this.name}_bucket${labelText(labels, '+Inf')} ${count}`)
    lines.push(`${this.name}_sum${labelText(labels)} ${numberText(sum)}`, `${this.name}_count${labelText(labels)} ${count}`)
    return lines
  }
}
