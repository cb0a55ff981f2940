import { readFileSync } from 'node:fs'
import { createRandom, type Random } from '../../tools/training/random.ts'

/**
 * Where the requests come from: a rate per second (generated, or recorded) from which arrivals
 * are drawn as a Poisson process, or recorded arrival timestamps replayed as they are.
 */
export type Trace =
  | { kind: 'rates'; ratesPerSecond: Float64Array }
  | { kind: 'arrivals'; timesS: Float64Array }

export const traceDurationS = (trace: Trace): number =>
  trace.kind === 'rates' ? trace.ratesPerSecond.length : Math.ceil(trace.timesS[trace.timesS.length - 1] ?? 0)

export const peakRate = (trace: Trace): number =>
  trace.kind === 'rates' ? Math.max(...trace.ratesPerSecond) : Number.NaN

export interface GeneratedTraceOptions {
  durationS: number
  /** The highest rate of the trace, spikes included, requests per second. */
  peakRps: number
  seed: number
  /** The night's rate as a share of the day's peak (before spikes). */
  troughShare?: number
  /** Hour of the day (0–24) at which the diurnal curve peaks. */
  peakHour?: number
  /** Hour of the day the trace starts at; by default the window is centred on the peak. */
  startHour?: number
  /** Sudden bursts per day: each lifts the rate by 50–100 % for 2–10 minutes, at a random time. */
  spikesPerDay?: number
}

const DAY_S = 86_400
const PEAK_HOUR = 14
export const DEFAULT_SPIKES_PER_DAY = 6

/** The spikes a generated trace of `durationS` gets: none in an hour at 6 a day. */
export const spikeCount = (durationS: number, spikesPerDay = DEFAULT_SPIKES_PER_DAY): number => Math.round((spikesPerDay * durationS) / DAY_S)

/**
 * A diurnal curve (a cosine between the trough and the peak, one cycle a day) with rectangular
 * spikes on top, scaled so its highest second is `peakRps`.
 */
export const generateTrace = ({ durationS, peakRps, seed, troughShare = 0.15, peakHour = PEAK_HOUR, startHour = centredStartHour(durationS, peakHour), spikesPerDay = DEFAULT_SPIKES_PER_DAY }: GeneratedTraceOptions): Trace => {
  const random = createRandom(seed)
  const rates = new Float64Array(durationS)
  for (let t = 0; t < durationS; t++) {
    const phase = (2 * Math.PI * (t + (startHour - peakHour) * 3600)) / DAY_S
    rates[t] = troughShare + (1 - troughShare) * (1 + Math.cos(phase)) / 2
  }
  const spikes = spikeCount(durationS, spikesPerDay)
  for (let i = 0; i < spikes; i++) {
    const start = random.int(0, durationS - 1)
    const length = random.int(120, 600)
    const lift = 1.5 + random.next() / 2
    for (let t = start; t < Math.min(durationS, start + length); t++) rates[t] *= lift
  }
  const max = Math.max(...rates)
  for (let t = 0; t < durationS; t++) rates[t] *= peakRps / max
  return { kind: 'rates', ratesPerSecond: rates }
}

/**
 * A trace the settings were not tuned on, as long as the committed one, over the same hours of the
 * day and with the same peak: another seed, and spikes 8 times as often (48 a day, two an hour).
 */
export const HOLDOUT = { seedOffset: 1, spikesPerDay: 48 } as const

export const holdoutTrace = (durationS: number, peakRps: number, seed: number, startHour: number): Trace =>
  generateTrace({ durationS, peakRps, seed: seed + HOLDOUT.seedOffset, startHour, spikesPerDay: HOLDOUT.spikesPerDay })

/** The hour of the day a generated window of `durationS` starts at when none is named: centred on the peak. */
export const centredStartHour = (durationS: number, peakHour = PEAK_HOUR): number => peakHour - durationS / 7200

/**
 * The hour around the daily peak, same seed and peak: nearly flat, so no autoscaler can hold fewer
 * replica-hours than a fixed count sized for it; it must still meet the SLA there.
 */
export const peakHourTrace = (peakRps: number, seed: number): Trace =>
  generateTrace({ durationS: 3600, peakRps, seed, startHour: centredStartHour(3600) })

/** Multiplies a rate trace so its highest second is `peakRps` (a recorded day replayed at another scale). */
export const scaleTrace = (trace: Trace, peakRps: number): Trace => {
  if (trace.kind !== 'rates') throw new Error('--peak rescales a trace of rates; a trace of timestamps is replayed as recorded')
  const factor = peakRps / peakRate(trace)
  return { kind: 'rates', ratesPerSecond: trace.ratesPerSecond.map((r) => r * factor) }
}

const ascending = (times: Float64Array, file: string): Float64Array => {
  for (let i = 1; i < times.length; i++) if (!(times[i] >= times[i - 1])) throw new Error(`${file}: timestamps must ascend (entry ${i})`)
  return times
}

const finite = (values: number[], file: string): number[] => {
  const bad = values.findIndex((v) => !Number.isFinite(v) || v < 0)
  if (bad >= 0) throw new Error(`${file}: entry ${bad} is not a non-negative number`)
  return values
}

/**
 * A recorded trace. CSV with a header line: `rps` (one line per second, the rate in requests per
 * second) or `timestamp_s` (one line per request, seconds since the start, ascending); other
 * columns are ignored. JSON: `{"ratesPerSecond": [...]}` or `{"arrivalsS": [...]}`.
 */
export const readTrace = (file: string): Trace => {
  const text = readFileSync(file, 'utf8')
  if (file.endsWith('.json')) {
    const json = JSON.parse(text) as { ratesPerSecond?: number[]; arrivalsS?: number[] }
    if (json.ratesPerSecond) return { kind: 'rates', ratesPerSecond: Float64Array.from(finite(json.ratesPerSecond, file)) }
    if (json.arrivalsS) return { kind: 'arrivals', timesS: ascending(Float64Array.from(finite(json.arrivalsS, file)), file) }
    throw new Error(`${file}: expected "ratesPerSecond" or "arrivalsS"`)
  }
  const [header, ...lines] = text.split(/\r?\n/).filter((l) => l.trim() !== '')
  const columns = header.split(',').map((c) => c.trim())
  const column = (name: string) => finite(lines.map((l) => Number(l.split(',')[columns.indexOf(name)])), file)
  if (columns.includes('rps')) return { kind: 'rates', ratesPerSecond: Float64Array.from(column('rps')) }
  if (columns.includes('timestamp_s')) return { kind: 'arrivals', timesS: ascending(Float64Array.from(column('timestamp_s')), file) }
  throw new Error(`${file}: the header must name a column "rps" or "timestamp_s"`)
}

/** Arrival times in order, one at a time: `peek` is the next (Infinity past the end), `take` consumes it. */
export interface ArrivalStream {
  peek(): number
  take(): void
}

/**
 * Poisson arrivals at a rate constant within each second: memorylessness lets a draw that crosses
 * into the next second restart there at that second's rate, which makes this exact.
 */
class PoissonArrivals implements ArrivalStream {
  private second = 0
  private next = 0

  constructor(private readonly rates: Float64Array, private readonly uniform: () => number) {
    this.advance(0)
  }

  peek(): number {
    return this.next
  }

  take(): void {
    this.advance(this.next)
  }

  private advance(from: number): void {
    const rates = this.rates
    let t = from
    while (this.second < rates.length) {
      const rate = rates[this.second]
      if (rate > 0) {
        const candidate = t - Math.log(1 - this.uniform()) / rate
        if (candidate < this.second + 1) {
          this.next = candidate
          return
        }
      }
      this.second++
      t = this.second
    }
    this.next = Infinity
  }
}

const replayedArrivals = (times: Float64Array): ArrivalStream => {
  let i = 0
  return { peek: () => (i < times.length ? times[i] : Infinity), take: () => void i++ }
}

export const arrivalsOf = (trace: Trace, random: Random): ArrivalStream =>
  trace.kind === 'rates' ? new PoissonArrivals(trace.ratesPerSecond, random.next) : replayedArrivals(trace.timesS)
