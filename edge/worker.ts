import { createApp } from './app.ts'
import type { Bindings } from './env.ts'

const app = createApp()

/** The Cloudflare Workers entry point (wrangler.toml `main`). */
export default {
  fetch: app.fetch,
  /**
   * Cron Trigger (every minute): the rollout controller's tick. Until the controller lands it
   * only records the tick, so a missed schedule is visible in the logs.
   */
  async scheduled(controller: { cron: string; scheduledTime: number }, _env: Bindings): Promise<void> {
    console.log(JSON.stringify({ level: 'info', msg: 'scheduled tick', cron: controller.cron, scheduled_time: controller.scheduledTime, controller: 'not configured' }))
  },
}
