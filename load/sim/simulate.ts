import { Due, dueBatch, type BatchPolicy } from '../../backend/batcher/policy.ts'
import type { BatchReason } from '../../shared/protocol.ts'
import type { Random } from '../../tools/training/random.ts'
import { Accounting, type SimulationResult } from './accounting.ts'
import type { BatcherSettings } from './batcher-settings.ts'
import { COMPLETE, EventQueue, READY_UP, SCRAPE, SYNC, TICK, TIMER, type SimEvent } from './events.ts'
import { DEFAULT_TOLERANCE, HorizontalPodAutoscaler, HPA_SYNC_PERIOD_S, recommendFromPods, recommendFromTotal } from './hpa.ts'
import { DRAINING, READY, Replica, STARTING } from './replica.ts'
import type { AutoscalerConfig } from './scaler-config.ts'
import type { ArrivalStream } from './trace.ts'

/**
 * How the Service spreads requests over ready pods. kube-proxy in iptables mode (its default)
 * picks an endpoint at random per connection, in IPVS mode round-robin; with many keep-alive
 * connections from the edge both approach per-request choice. `least-loaded` is what an L7 proxy
 * with least-request balancing does (Envoy, a service mesh), for comparison.
 */
export type Routing = 'random' | 'round-robin' | 'least-loaded'

export type Scaling =
  | { kind: 'fixed'; replicas: number }
  | {
      kind: 'autoscaler'
      config: AutoscalerConfig
      /** Seconds from the scale-up decision to Ready: scheduling, image pull, model load and warm-up. */
      startDelayS: number
      scrapeIntervalS: number
      syncPeriodS?: number
      tolerance?: number
    }

export interface SimulationOptions {
  arrivals: ArrivalStream
  durationS: number
  batcher: BatcherSettings
  /** Seconds a batch of `rows` keeps one executor instance busy (may draw from `random`). */
  serviceTime: (rows: number) => number
  routing: Routing
  scaling: Scaling
  random: Random
  /** Width of the time series' buckets. */
  bucketS?: number
  /** p95 above which a bucket counts as an SLA violation. */
  slaP95S?: number
  /** Told of every batch as it leaves a replica's queue. */
  onBatch?: (at: number, rows: number, reason: BatchReason) => void
}

export type { Bucket, SimulationResult } from './accounting.ts'

/**
 * A discrete-event simulation of the GPU tier: one-row requests arrive, the Service routes each to
 * a ready pod, each pod runs the backend's dynamic batcher (idle dispatch, or Triton's full/preferred/delay;
 * a batch leaves only when an executor instance is free) over a FIFO queue bounded at max_queue_size, and the
 * autoscaler reads the summed queue-depth gauge as Prometheus last scraped it, every HPA sync.
 */
export const simulate = (options: SimulationOptions): SimulationResult => {
  const { arrivals, durationS, batcher, serviceTime, routing, scaling, random } = options
  const bucketS = options.bucketS ?? 60
  const slaP95S = options.slaP95S ?? Infinity
  const { dispatch, maxBatchSize, maxQueueDelayS, preferredBatchSizes, maxQueueSize, instances } = batcher
  const policy: BatchPolicy = { batching: true, dispatch, maxBatchSize, maxQueueDelay: maxQueueDelayS, preferredBatchSizes }
  const due = new Due()
  const onBatch = options.onBatch
  const accounting = new Accounting(durationS, bucketS, slaP95S)

  const events = new EventQueue()
  const pods: Replica[] = []
  let ready: Replica[] = []
  let roundRobin = 0
  let replicaSeconds = 0
  let lastHeldChange = 0
  let maxHeld = 0

  const held = () => pods.reduce((n, p) => (p.state === DRAINING ? n : n + 1), 0)
  const refreshReady = () => {
    ready = pods.filter((p) => p.state === READY)
  }
  const accountHeld = (now: number) => {
    replicaSeconds += held() * (now - lastHeldChange)
    lastHeldChange = now
  }

  const send = (replica: Replica, rows: number, reason: BatchReason, now: number) => {
    onBatch?.(now, rows, reason)
    const done = now + serviceTime(rows)
    accounting.batch(replica.queue, replica.head, rows, now, done)
    replica.head += rows
    if (replica.head === replica.tail) replica.head = replica.tail = 0
    replica.busy++
    replica.runningRows += rows
    events.push({ at: done, kind: COMPLETE, replica, rows })
  }

  /** The backend's pump, with the backend's policy: while an instance is free, every batch that is due leaves; else a timer for the oldest request. */
  const pump = (replica: Replica, now: number) => {
    for (;;) {
      dueBatch(policy, replica, now, replica.busy < instances, false, due)
      if (due.reason !== 'wait') {
        send(replica, Math.min(due.count, due.rows, replica.queued), due.reason, now)
        continue
      }
      if (due.until !== Infinity && replica.timerAt !== due.until) {
        replica.timerAt = due.until
        events.push({ at: due.until, kind: TIMER, replica, rows: 0 })
      }
      return
    }
  }

  const route = (): Replica | undefined => {
    const n = ready.length
    if (n === 0) return undefined
    if (routing === 'random') return ready[Math.floor(random.next() * n)]
    if (routing === 'round-robin') return ready[roundRobin++ % n]
    let best = ready[0]
    for (let i = 1; i < n; i++) if (ready[i].depth < best.depth) best = ready[i]
    return best
  }

  const addPod = (now: number, startDelayS: number) => {
    const pod = new Replica()
    pods.push(pod)
    if (startDelayS > 0) {
      pod.state = STARTING
      events.push({ at: now + startDelayS, kind: READY_UP, replica: pod, rows: 0 })
    }
  }

  /** ReplicaSet scale-down: pods not yet ready go first, then the youngest; a deleted pod leaves the endpoints and drains. */
  const removePod = () => {
    const starting = pods.findLastIndex((p) => p.state === STARTING)
    const index = starting >= 0 ? starting : pods.findLastIndex((p) => p.state === READY)
    const pod = pods[index]
    if (pod.state === STARTING || pod.depth === 0) pods.splice(index, 1)
    else pod.state = DRAINING
  }

  const scaleTo = (desired: number, now: number, startDelayS: number) => {
    accountHeld(now)
    for (let n = held(); n < desired; n++) addPod(now, startDelayS)
    for (let n = held(); n > desired; n--) removePod()
    maxHeld = Math.max(maxHeld, held())
    refreshReady()
  }

  const initial = scaling.kind === 'fixed' ? scaling.replicas : scaling.config.minReplicas
  for (let i = 0; i < initial; i++) addPod(0, 0)
  maxHeld = initial
  refreshReady()

  let scraped: number[] = []
  let scrapedMissing = 0
  let hpa: HorizontalPodAutoscaler | undefined
  if (scaling.kind === 'autoscaler') {
    hpa = new HorizontalPodAutoscaler(scaling.config)
    // Prometheus' and the controller's clocks have no relation to the trace's: random phases.
    events.push({ at: random.next() * scaling.scrapeIntervalS, kind: SCRAPE, replica: undefined, rows: 0 })
    events.push({ at: random.next() * (scaling.syncPeriodS ?? HPA_SYNC_PERIOD_S), kind: SYNC, replica: undefined, rows: 0 })
  }
  events.push({ at: 1, kind: TICK, replica: undefined, rows: 0 })

  const sync = (now: number) => {
    if (scaling.kind !== 'autoscaler' || !hpa) return
    const { config } = scaling
    const tolerance = scaling.tolerance ?? DEFAULT_TOLERANCE
    const current = held()
    const totalDepth = scraped.reduce((s, v) => s + v, 0)
    const recommendation = config.source === 'keda'
      ? recommendFromTotal(current, totalDepth, config.target, tolerance)
      : recommendFromPods(current, scraped, scrapedMissing, config.target, tolerance)
    const desired = hpa.reconcile(now, current, recommendation)
    if (desired !== current) scaleTo(desired, now, scaling.startDelayS)
  }

  const handle = (event: SimEvent) => {
    const now = event.at
    const replica = event.replica
    switch (event.kind) {
      case COMPLETE:
        replica!.busy--
        replica!.runningRows -= event.rows
        pump(replica!, now)
        if (replica!.state === DRAINING && replica!.depth === 0) pods.splice(pods.indexOf(replica!), 1)
        break
      case TIMER:
        if (replica!.timerAt === now) replica!.timerAt = Infinity
        pump(replica!, now)
        break
      case READY_UP:
        if (pods.includes(replica!)) {
          replica!.state = READY
          refreshReady()
        }
        break
      case SCRAPE:
        if (scaling.kind === 'autoscaler') {
          // Pods still starting have no series yet: the HPA counts them as missing.
          scraped = pods.filter((p) => p.state !== STARTING).map((p) => p.depth)
          scrapedMissing = pods.length - scraped.length
          events.push({ at: now + scaling.scrapeIntervalS, kind: SCRAPE, replica: undefined, rows: 0 })
        }
        break
      case SYNC:
        sync(now)
        if (scaling.kind === 'autoscaler') events.push({ at: now + (scaling.syncPeriodS ?? HPA_SYNC_PERIOD_S), kind: SYNC, replica: undefined, rows: 0 })
        break
      case TICK:
        accounting.sample(now, pods.reduce((s, p) => s + p.depth, 0), ready.length, held())
        events.push({ at: now + 1, kind: TICK, replica: undefined, rows: 0 })
        break
    }
  }

  for (;;) {
    const nextArrival = arrivals.peek()
    const nextEvent = events.peekAt()
    if (Math.min(nextArrival, nextEvent) > durationS) break
    if (nextEvent <= nextArrival) {
      handle(events.pop())
      continue
    }
    arrivals.take()
    accounting.arrived(nextArrival)
    const replica = route()
    if (!replica || replica.queued + 1 > maxQueueSize) {
      accounting.refused(nextArrival)
      continue
    }
    replica.push(nextArrival)
    pump(replica, nextArrival)
  }
  accountHeld(durationS)
  return accounting.result(replicaSeconds, maxHeld)
}
