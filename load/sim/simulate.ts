import { Due, dueBatch, type BatchPolicy } from '../../backend/batcher/policy.ts'
import type { BatchReason } from '../../shared/protocol.ts'
import type { Random } from '../../tools/training/random.ts'
import { Accounting, type SimulationResult } from './accounting.ts'
import type { BatcherSettings } from './batcher-settings.ts'
import { Cluster, podRates, type Routing, type Scrape } from './cluster.ts'
import { COMPLETE, EventQueue, READY_UP, SCRAPE, SYNC, TICK, TIMER, type SimEvent } from './events.ts'
import { DEFAULT_TOLERANCE, HorizontalPodAutoscaler, HPA_SYNC_PERIOD_S, recommendFromMetrics, recommendFromPods, recommendFromTotal } from './hpa.ts'
import type { Replica } from './replica.ts'
import type { AutoscalerConfig } from './scaler-config.ts'
import type { ArrivalStream } from './trace.ts'

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
      /** Pods at the trace's start (default minReplicas): the autoscaler has been running before it. */
      initialReplicas?: number
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
export type { Routing } from './cluster.ts'

/**
 * A discrete-event simulation of the GPU tier: one-row requests arrive, the Service routes each to
 * a ready pod, each pod runs the backend's dynamic batcher (idle dispatch, or Triton's full/preferred/delay;
 * a batch leaves only when an executor instance is free) over a FIFO queue bounded at max_queue_size, and the
 * autoscaler reads the summed queue-depth gauge as Prometheus last scraped it, and the request rate
 * as rate() over the scrapes of its range, every HPA sync, and takes the larger recommendation.
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

  const cluster = new Cluster(scaling.kind === 'fixed' ? scaling.replicas : scaling.initialReplicas ?? scaling.config.minReplicas, routing, random, events)

  /** What Prometheus scraped, newest last, as far back as the rate's range; the autoscaler reads it at every sync. */
  let scrapes: Scrape[] = []
  const rateWindowS = scaling.kind === 'autoscaler' ? scaling.config.rate?.windowS ?? 0 : 0
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
    const current = cluster.held()
    const scraped = scrapes[scrapes.length - 1] ?? { depths: [], missing: 0 }
    const totalDepth = scraped.depths.reduce((s, v) => s + v, 0)
    const recommendations: Array<number | undefined> = [config.source === 'keda'
      ? recommendFromTotal(current, totalDepth, config.target, tolerance)
      : recommendFromPods(current, scraped.depths, scraped.missing, config.target, tolerance)]
    if (config.rate) {
      // What the rate query answers now: the scrapes within its range.
      const rates = podRates(scrapes.filter((s) => s.at > now - config.rate!.windowS))
      const missing = cluster.pods.length - rates.length
      recommendations.push(config.source === 'keda'
        ? (rates.length === 0 ? undefined : recommendFromTotal(current, rates.reduce((s, v) => s + v, 0), config.rate.target, tolerance))
        : recommendFromPods(current, rates, missing, config.rate.target, tolerance))
    }
    const desired = hpa.reconcile(now, current, recommendFromMetrics(current, recommendations))
    if (desired !== current) cluster.scaleTo(desired, now, scaling.startDelayS)
  }

  const handle = (event: SimEvent) => {
    const now = event.at
    const replica = event.replica
    switch (event.kind) {
      case COMPLETE:
        replica!.busy--
        replica!.runningRows -= event.rows
        pump(replica!, now)
        cluster.finished(replica!)
        break
      case TIMER:
        if (replica!.timerAt === now) replica!.timerAt = Infinity
        pump(replica!, now)
        break
      case READY_UP:
        cluster.readyUp(replica!)
        break
      case SCRAPE:
        if (scaling.kind === 'autoscaler') {
          scrapes.push(cluster.scrape(now))
          if (scrapes.length > 1) scrapes = scrapes.filter((s, i) => i === scrapes.length - 1 || s.at > now - rateWindowS - scaling.scrapeIntervalS)
          events.push({ at: now + scaling.scrapeIntervalS, kind: SCRAPE, replica: undefined, rows: 0 })
        }
        break
      case SYNC:
        sync(now)
        if (scaling.kind === 'autoscaler') events.push({ at: now + (scaling.syncPeriodS ?? HPA_SYNC_PERIOD_S), kind: SYNC, replica: undefined, rows: 0 })
        break
      case TICK:
        accounting.sample(now, cluster.depth(), cluster.readyCount, cluster.held())
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
    const replica = cluster.route()
    if (replica) replica.arrivals++
    if (!replica || replica.queued + 1 > maxQueueSize) {
      accounting.refused(nextArrival)
      continue
    }
    replica.push(nextArrival)
    pump(replica, nextArrival)
  }
  return accounting.result(cluster.replicaSeconds(durationS), cluster.maxHeld)
}
