import { formatRuntimeTable } from './table.ts'

/** A target the benches judge: `a ÷ b` of one figure against a bound. */
export interface RatioTarget {
  name: string
  unit: string
  comparator: '≤' | '≥'
  target: number
}

export interface Verdict extends RatioTarget {
  /** The two figures divided, for the reader. */
  detail: string
  measured: number
  pass: boolean
  /**
   * The same ratio between each side and its duplicate (a second server of the same configuration,
   * measured in the same rounds): the run's noise floor beside the verdict. NaN where not measured.
   */
  noise: { a: number; b: number }
}

const short = (x: number): string => (Math.abs(x) >= 1000 ? `${(x / 1000).toFixed(1)}k` : x >= 10 ? x.toFixed(0) : x.toFixed(2))

const quotient = (x: number | undefined, y: number | undefined): number => (x === undefined || y === undefined ? Number.NaN : x / y)

/** `a ÷ b` against the target's bound; a missing side is a MISS, never a PASS. */
export const judge = (target: RatioTarget, a: number | undefined, b: number | undefined, twins?: { a?: number; b?: number }): Verdict => {
  const measured = quotient(a, b)
  const within = target.comparator === '≤' ? measured <= target.target : measured >= target.target
  return {
    ...target,
    detail: a === undefined || b === undefined ? 'not measured' : `${short(a)} ÷ ${short(b)} ${target.unit}`,
    measured,
    pass: Number.isFinite(measured) && within,
    noise: { a: quotient(a, twins?.a), b: quotient(b, twins?.b) },
  }
}

const ratio = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-')
const noiseCell = ({ a, b }: Verdict['noise']): string => (Number.isFinite(a) || Number.isFinite(b) ? `${ratio(a)} / ${ratio(b)}` : '-')

/** The targets with PASS/MISS, for each runtime, each beside its sides' duplicate ratios (the run's noise floor). */
export const formatVerdicts = (perRuntime: ReadonlyArray<{ node: string; verdicts: readonly Verdict[] }>): string =>
  formatRuntimeTable(
    ['target', 'from (medians)', 'measured', 'bound', 'result', 'noise: a÷a′ / b÷b′'],
    perRuntime.flatMap(({ node, verdicts }) =>
      verdicts.map((v) => ({
        key: v.name,
        node,
        cells: [v.name, v.detail, ratio(v.measured), `${v.comparator} ${v.target.toFixed(2)}`, v.pass ? 'PASS' : 'MISS', noiseCell(v.noise)],
      })),
    ),
    ['left', 'left', 'right', 'right', 'left', 'right'],
  )
