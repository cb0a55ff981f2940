import { createApp, type EdgeAppOptions } from './app.ts'
import { controllerConfigFrom } from './rollout/controller-config.ts'
import { createController } from './rollout/controller.ts'
import { shadowCountsOf } from './rollout/shadow-promotion.ts'
import { createWebhook, type WebhookOptions } from './rollout/webhook.ts'
import type { Bindings } from './bindings.ts'
import { randomUuid } from './random-ids.ts'
import { createIsolate, isolateCache } from './isolate.ts'
import { messageOf } from './format.ts'

/** What a Cron Trigger hands the worker. */
export interface ScheduledEvent {
  cron: string
  scheduledTime: number
}

/** The part of the Workers execution context the scheduled handler uses. */
export interface BackgroundContext {
  waitUntil(promise: Promise<unknown>): void
}

export interface WorkerOptions extends Omit<EdgeAppOptions, 'isolateFor'> {
  /** Where the scheduled handler's lines go (the Workers console by default). */
  scheduledLog?: (line: string) => void
  /** Retries, backoff and timeout of the `ALERT_WEBHOOK_URL` deliveries. */
  webhook?: Omit<WebhookOptions, 'url'>
}

/**
 * The worker: the app for requests, and the rollout controller's tick for the Cron Trigger
 * (every minute). Both use one isolate per configuration, so without Redis the controller
 * drives the very rollout state the admin API wrote.
 */
export const createWorker = ({ parts, scheduledLog: log = console.log, webhook: delivery, ...options }: WorkerOptions = {}) => {
  const isolateFor = isolateCache((env) => createIsolate(env, parts))
  const app = createApp({ ...options, isolateFor })
  return {
    fetch: app.fetch,
    /** Never throws: a failing tick is logged, and the next one starts from the stored state. */
    async scheduled(event: ScheduledEvent, env: Bindings, ctx: BackgroundContext): Promise<void> {
      const tick = { cron: event.cron, scheduled_time: event.scheduledTime }
      try {
        const edge = isolateFor(env)
        const source = edge.monitor
        if (!source) {
          log(JSON.stringify({ level: 'warn', msg: 'scheduled tick skipped: no monitor source configured', ...tick }))
          return
        }
        const webhook = env.ALERT_WEBHOOK_URL ? createWebhook({ log, ...delivery, url: env.ALERT_WEBHOOK_URL }) : undefined
        const controller = createController({
          rollouts: edge.rollouts,
          source,
          models: () => edge.transport.models(randomUuid()),
          config: controllerConfigFrom(env),
          shadowCounts: async (model, version) => shadowCountsOf(await edge.requestMetrics.totals(), model, version),
          // Deliveries outlive the tick: the handler returns while they retry.
          ...(webhook ? { notify: (entry) => ctx.waitUntil(webhook(entry)) } : {}),
          log,
        })
        const outcomes = await controller.tick()
        log(JSON.stringify({ level: 'info', msg: 'scheduled tick', ...tick, canaries: outcomes.length }))
      } catch (error) {
        log(JSON.stringify({ level: 'error', msg: 'scheduled tick failed', ...tick, error: messageOf(error) }))
      }
    },
  }
}

/** The Cloudflare Workers entry point (wrangler.toml `main`). */
export default createWorker()
