import { binIndex } from '../../../shared/drift/statistics.ts'
import { PREDICTION_EDGES, type QualityBin, rowLogLoss } from '../../../shared/quality.ts'

/** What the edge served one predict request, kept until its labels arrive or its TTL passes. */
export interface ServedRecord {
  model: string
  version: number
  variant: string
  /** When it was served (epoch ms): a label's delay is counted from here. */
  at: number
  /** The model's labels, so feedback is checked against the labels it could have been. */
  labels: string[]
  /** P(labels[1]) per instance of the request, in request order. */
  scores: number[]
}

/**
 * Whose request a record is: the caller's tenant and the request id it was answered under. Two
 * tenants may send the same id and each keeps its own record; a tenant that reuses one of its own
 * ids replaces that record (see `serve`).
 */
export interface ServedKey {
  tenant: string
  requestId: string
}

/** A record as the store holds it: `servedId` names this one serving of the key, not any earlier one under the same id. */
export interface Served extends ServedRecord {
  servedId: string
}

/** One accepted label, counted into the minute its prediction was served (and that minute's hour). */
export interface LabelCount {
  model: string
  version: number
  /** The minute the labelled prediction was served (the record's `at`), however late the label comes. */
  minute: number
  score: number
  positive: boolean
  delaySeconds: number
}

/** A label for one instance of a record read from the store, and what it adds to the counts. */
export interface LabelWrite {
  key: ServedKey
  /** The `servedId` of the record the label was checked against. */
  servedId: string
  index: number
  label: string
  count: LabelCount
}

/**
 * What a label write did: `counted` now; `already` counted by an earlier write of the same label
 * (a resend); `duplicate`, the instance holds another label (the first stands); `gone`, the record
 * expired or was replaced since it was read.
 */
export type LabelOutcome = 'counted' | 'already' | 'duplicate' | 'gone'

/** Upper bounds (seconds) of the label-delay histogram's buckets; one more bucket holds the rest. */
export const DELAY_BUCKETS = [60, 600, 3_600, 21_600, 86_400, 604_800, 2_592_000] as const

/** A version's counts summed over a range of serving minutes. */
export interface WindowCounts {
  /** Labelled rows and label-positive rows per prediction bin. */
  bins: QualityBin[]
  /** Σ score per prediction bin, over the labelled rows. */
  scoreSums: number[]
  logLossSum: number
  /** Labels per delay bucket (`DELAY_BUCKETS`, then the rest). */
  delays: number[]
  /** Calls to this version that failed at the edge without an answer from the backend. */
  edgeFailures: number
}

/**
 * Served records, their labels and the counts labels and edge-side failures add to: in Redis
 * when configured, so every isolate answers feedback for what any isolate served and the counts
 * are merged, else in this isolate.
 */
export interface GroundTruthStore {
  /**
   * Keeps what was served under `key` for `ttlSeconds`, with a fresh `servedId`. A key served
   * again (a tenant reusing its own request id) is replaced whole: the labels of the earlier
   * serving go with it, and labels from then on are for the new one.
   */
  serve(key: ServedKey, record: ServedRecord, ttlSeconds: number): Promise<void>
  records(keys: readonly ServedKey[]): Promise<Array<Served | undefined>>
  /**
   * Marks each instance with its label and adds its counts, both at once per item: a write whose
   * answer was lost may be sent again whole, and a label already written is not counted twice.
   */
  label(writes: readonly LabelWrite[]): Promise<LabelOutcome[]>
  edgeFailure(model: string, version: number, minute: number): Promise<void>
  window(model: string, version: number, fromMinute: number, toMinute: number): Promise<WindowCounts>
}

const BINS = PREDICTION_EDGES.length + 1

export const emptyWindow = (): WindowCounts => ({
  bins: Array.from({ length: BINS }, () => ({ rows: 0, positives: 0 })),
  scoreSums: new Array<number>(BINS).fill(0),
  logLossSum: 0,
  delays: new Array<number>(DELAY_BUCKETS.length + 1).fill(0),
  edgeFailures: 0,
})

const delayBucket = (seconds: number): number => {
  const i = DELAY_BUCKETS.findIndex((le) => seconds <= le)
  return i < 0 ? DELAY_BUCKETS.length : i
}

/**
 * One minute's counts as hash fields, the same in Redis and in memory: `r`/`p`/`s` + bin for rows,
 * positives and Σ score, `ll` for Σ log loss, `d` + bucket for delays, `f` for edge failures.
 */
export type MinuteFields = Map<string, number>

export const labelFields = (label: LabelCount): Array<[string, number]> => {
  const bin = binIndex(PREDICTION_EDGES, label.score)
  return [
    [`r${bin}`, 1],
    [`p${bin}`, label.positive ? 1 : 0],
    [`s${bin}`, label.score],
    ['ll', rowLogLoss(label.score, label.positive)],
    [`d${delayBucket(label.delaySeconds)}`, 1],
  ]
}

export const EDGE_FAILURES = 'f'

/** Adds one minute's fields into a window. */
export const addMinute = (into: WindowCounts, fields: Iterable<[string, number]>): void => {
  for (const [name, value] of fields) {
    const kind = name.charAt(0)
    const i = Number(name.slice(1))
    if (name === 'll') into.logLossSum += value
    else if (name === EDGE_FAILURES) into.edgeFailures += value
    else if (kind === 'r' && i < BINS) into.bins[i].rows += value
    else if (kind === 'p' && i < BINS) into.bins[i].positives += value
    else if (kind === 's' && i < BINS) into.scoreSums[i] += value
    else if (kind === 'd' && i < into.delays.length) into.delays[i] += value
  }
}

/**
 * Counts live twice: per minute, kept a day past the minute, and per hour, kept a week past the
 * hour. Labels are counted by when their prediction was served, so a minute's counts grow for as
 * long as its labels trickle in; a label for a minute whose counts have expired adds to its hour
 * only, and one for an hour past the week is marked (a resend stays "already") but counted nowhere.
 */
export const MINUTE_RETENTION_MINUTES = 24 * 60
export const HOUR_RETENTION_HOURS = 7 * 24
/** Longest window the quality route reads: the hours' retention. */
export const MAX_QUALITY_WINDOW_MINUTES = HOUR_RETENTION_HOURS * 60

export const hourOf = (minute: number): number => Math.floor(minute / 60)

/** A minute (`m`) or hour (`h`) of counts: minutes and hours since the epoch. */
export interface CountsSlot {
  unit: 'm' | 'h'
  at: number
}

/** A slot a write adds to, and when (epoch seconds) it may be forgotten. */
export interface CountsKey extends CountsSlot {
  expiresAt: number
}

/**
 * The counts a label or edge failure of `minute` adds to: its minute and its hour, each while kept
 * (none once expired at `nowMs`). Both are written by the same call, so a write counted once is
 * counted once in each.
 */
export const countsKeys = (minute: number, nowMs: number): CountsKey[] =>
  [
    { unit: 'm' as const, at: minute, expiresAt: (minute + 1 + MINUTE_RETENTION_MINUTES) * 60 },
    { unit: 'h' as const, at: hourOf(minute), expiresAt: ((hourOf(minute) + 1) * 60 + MAX_QUALITY_WINDOW_MINUTES + 60) * 60 },
  ].filter((k) => k.expiresAt * 1_000 > nowMs)

/**
 * What a window of minutes `from`..`to` reads: each whole hour inside it from its hourly rollup,
 * the minutes at either end from their own counts. A window longer than the minutes are kept
 * is widened to whole hours (so a 7-day read is its 168 hours, a day at most ~140 reads).
 */
export const windowReads = (from: number, to: number): CountsSlot[] => {
  if (to - from + 1 > MINUTE_RETENTION_MINUTES) {
    from = hourOf(from) * 60
    to = hourOf(to) * 60 + 59
  }
  const reads: CountsSlot[] = []
  let m = from
  while (m <= to) {
    if (m % 60 === 0 && m + 59 <= to) {
      reads.push({ unit: 'h', at: hourOf(m) })
      m += 60
    } else reads.push({ unit: 'm', at: m++ })
  }
  return reads
}

/** One name per served key, the same in memory and in Redis (a tenant name has no ":"). */
export const servedName = ({ tenant, requestId }: ServedKey): string => `${tenant}:${requestId}`
