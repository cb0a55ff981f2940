/**
 * The capacity search: the highest arrival rate at which the SLA holds. The rate steps up
 * geometrically until the SLA breaks (or the cap on steps or rate ends it), then bisects between
 * the highest rate that held and the lowest that broke until they are within `tolerance` of each
 * other. Pure: `probe` runs a step (a real open-model run, or a fake curve in tests).
 */

export type Phase = 'step' | 'bisect' | 'confirm'

export interface CapacitySla {
  p95Ms: number
  /** The most failures per request a sustainable rate may have (inclusive). */
  maxErrorRate: number
}

export interface Probe {
  /** The arrival rate asked for, requests per second. */
  rate: number
  p95Ms: number
  errorRate: number
}

export interface SearchOptions<T extends Probe> {
  sla: CapacitySla
  probe(rate: number, phase: Phase): Promise<T>
  startRate: number
  /** Factor between rates while stepping up. */
  growth: number
  /** Relative gap between held and broken at which bisection stops. */
  tolerance: number
  maxSteps: number
  /** Rates above it are not tried. */
  maxRate: number
  /**
   * Run a broken step once more and take the better of the two: on shared cores a neighbour's
   * burst only ever adds latency, so one slow run is not yet the target's limit.
   */
  confirmBreaks?: boolean
}

export interface SearchResult<T extends Probe> {
  /** Every step in the order run. */
  steps: Array<T & { phase: Phase }>
  /** The highest rate that held, if any did. */
  capacity: T | undefined
  /** The lowest rate that broke, if any did: the knee lies between the two. */
  knee: T | undefined
  /** Why the search ended. */
  ended: 'converged' | 'max-steps' | 'max-rate' | 'broke-at-start'
}

export const holds = (sla: CapacitySla, p: Probe): boolean => p.p95Ms < sla.p95Ms && p.errorRate <= sla.maxErrorRate

export const findCapacity = async <T extends Probe>(options: SearchOptions<T>): Promise<SearchResult<T>> => {
  const { sla, probe, growth, tolerance, maxSteps, maxRate } = options
  const steps: SearchResult<T>['steps'] = []
  let capacity: T | undefined
  let knee: T | undefined
  let rate = Math.min(maxRate, Math.max(1, Math.round(options.startRate)))
  const result = (ended: SearchResult<T>['ended']): SearchResult<T> => ({ steps, capacity, knee, ended })
  while (steps.length < maxSteps) {
    const phase = knee === undefined ? 'step' : 'bisect'
    let measured = await probe(rate, phase)
    steps.push({ ...measured, phase })
    if (options.confirmBreaks && !holds(sla, measured) && steps.length < maxSteps) {
      const again = await probe(rate, 'confirm')
      steps.push({ ...again, phase: 'confirm' })
      if (holds(sla, again)) measured = again
    }
    if (holds(sla, measured)) {
      if (capacity === undefined || measured.rate > capacity.rate) capacity = measured
    } else if (knee === undefined || measured.rate < knee.rate) {
      knee = measured
    }
    if (knee === undefined) {
      if (rate >= maxRate) return result('max-rate')
      rate = Math.min(maxRate, Math.max(rate + 1, Math.round(rate * growth)))
      continue
    }
    if (capacity === undefined) return result('broke-at-start')
    const next = Math.round((capacity.rate + knee.rate) / 2)
    if ((knee.rate - capacity.rate) / capacity.rate <= tolerance || next <= capacity.rate || next >= knee.rate) return result('converged')
    rate = next
  }
  return result('max-steps')
}
