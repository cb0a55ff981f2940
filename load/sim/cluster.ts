import type { Random } from '../../tools/training/random.ts'
import { READY_UP, type EventQueue } from './events.ts'
import { DRAINING, READY, Replica, STARTING } from './replica.ts'

/**
 * How the Service spreads requests over ready pods. kube-proxy in iptables mode (its default)
 * picks an endpoint at random per connection, in IPVS mode round-robin; with many keep-alive
 * connections from the edge both approach per-request choice. `least-loaded` is what an L7 proxy
 * with least-request balancing does (Envoy, a service mesh), for comparison.
 */
export type Routing = 'random' | 'round-robin' | 'least-loaded'

/** One Prometheus scrape of the pods. */
export interface Scrape {
  at: number
  depths: number[]
  missing: number
  counters: Map<Replica, number>
}

/**
 * rate() over the scrapes of its range: per pod, the counter's increase from the first to the last
 * sample in the range over the time between them; a pod with fewer than two samples has no rate yet.
 */
export const podRates = (scrapes: readonly Scrape[]): number[] => {
  const last = scrapes[scrapes.length - 1]
  if (!last) return []
  const rates: number[] = []
  for (const [pod, count] of last.counters) {
    const first = scrapes.find((s) => s.counters.has(pod))!
    if (first !== last) rates.push((count - first.counters.get(pod)!) / (last.at - first.at))
  }
  return rates
}

/** The Deployment's pods behind the Service: where a request goes, and what scaling does to the pods. */
export class Cluster {
  readonly pods: Replica[] = []
  /** The Service's endpoints: the pods that are ready. */
  private ready: Replica[] = []
  private roundRobin = 0
  /** Integral of pods held (ready or starting) over time, up to `lastHeldChange`: what the GPU nodes cost. */
  private replicaSecondsSoFar = 0
  private lastHeldChange = 0
  /** The most pods held at once. */
  maxHeld: number

  constructor(initial: number, private readonly routing: Routing, private readonly random: Random, private readonly events: EventQueue) {
    for (let i = 0; i < initial; i++) this.addPod(0, 0)
    this.maxHeld = initial
    this.refreshReady()
  }

  get readyCount(): number {
    return this.ready.length
  }

  /** Pods the Deployment holds: ready and starting, not those draining after a scale-down. */
  held(): number {
    return this.pods.reduce((n, p) => (p.state === DRAINING ? n : n + 1), 0)
  }

  /** Rows waiting and running over all pods. */
  depth(): number {
    return this.pods.reduce((s, p) => s + p.depth, 0)
  }

  /** Pod-seconds held up to `now`. */
  replicaSeconds(now: number): number {
    this.accountHeld(now)
    return this.replicaSecondsSoFar
  }

  route(): Replica | undefined {
    const { ready } = this
    const n = ready.length
    if (n === 0) return undefined
    if (this.routing === 'random') return ready[Math.floor(this.random.next() * n)]
    if (this.routing === 'round-robin') return ready[this.roundRobin++ % n]
    let best = ready[0]
    for (let i = 1; i < n; i++) if (ready[i].depth < best.depth) best = ready[i]
    return best
  }

  scaleTo(desired: number, now: number, startDelayS: number): void {
    this.accountHeld(now)
    for (let n = this.held(); n < desired; n++) this.addPod(now, startDelayS)
    for (let n = this.held(); n > desired; n--) this.removePod()
    this.maxHeld = Math.max(this.maxHeld, this.held())
    this.refreshReady()
  }

  /** The pod's start delay is over; it joins the endpoints unless scaled away meanwhile. */
  readyUp(pod: Replica): void {
    if (!this.pods.includes(pod)) return
    pod.state = READY
    this.refreshReady()
  }

  /** A batch of `pod` finished: a draining pod with nothing left is gone. */
  finished(pod: Replica): void {
    if (pod.state === DRAINING && pod.depth === 0) this.pods.splice(this.pods.indexOf(pod), 1)
  }

  /**
   * Each pod's depth gauge and requests counter as Prometheus scrapes them; pods still starting have
   * no series yet, and the HPA counts them as missing.
   */
  scrape(at: number): Scrape {
    const serving = this.pods.filter((p) => p.state !== STARTING)
    return { at, depths: serving.map((p) => p.depth), missing: this.pods.length - serving.length, counters: new Map(serving.map((p) => [p, p.arrivals])) }
  }

  private accountHeld(now: number): void {
    this.replicaSecondsSoFar += this.held() * (now - this.lastHeldChange)
    this.lastHeldChange = now
  }

  private refreshReady(): void {
    this.ready = this.pods.filter((p) => p.state === READY)
  }

  private addPod(now: number, startDelayS: number): void {
    const pod = new Replica()
    this.pods.push(pod)
    if (startDelayS > 0) {
      pod.state = STARTING
      this.events.push({ at: now + startDelayS, kind: READY_UP, replica: pod, rows: 0 })
    }
  }

  /** ReplicaSet scale-down: pods not yet ready go first, then the youngest; a deleted pod leaves the endpoints and drains. */
  private removePod(): void {
    const { pods } = this
    const starting = pods.findLastIndex((p) => p.state === STARTING)
    const index = starting >= 0 ? starting : pods.findLastIndex((p) => p.state === READY)
    const pod = pods[index]
    if (pod.state === STARTING || pod.depth === 0) pods.splice(index, 1)
    else pod.state = DRAINING
  }
}
