import * as z from 'zod'
import { controllerConfigFrom } from '../rollout/controller-config.ts'
import { RATE_LIMIT } from '../openapi/components.ts'
import type { Responder } from '../pipeline/stage.ts'
import { answer, route } from './route.ts'

/** How often the controller decides: the worker's Cron Trigger (wrangler.toml `crons = ["* * * * *"]`). */
export const CONTROLLER_TICK_SECONDS = 60

/** `GET /v1/rollout/controller`: the ladder and the rules that decide when a canary may take its next step. */
export const controllerSettings = z.object({
  steps: z.array(z.number()).describe('CONTROLLER_STEPS: the canary\'s weights in order, as a percentage of the weight it and its baseline hold together; 100 is the promotion'),
  dwell_minutes: z.number().describe('CONTROLLER_DWELL_MINUTES: minutes at a weight before the next step'),
  clean_windows: z.number().int().describe('CONTROLLER_CLEAN_WINDOWS: clean windows needed at a weight before the next step'),
  critical_windows: z.number().int().describe('CONTROLLER_CRITICAL_WINDOWS: consecutive critical prediction-drift windows that roll back'),
  min_rows: z.number().int().describe('CONTROLLER_MIN_ROWS: rows each arm needs in a window for a verdict'),
  min_requests: z.number().int().describe('CONTROLLER_MIN_REQUESTS: canary requests before its error rate can roll it back'),
  tick_seconds: z.number().int().describe('how often the controller decides (its Cron Trigger)'),
})

const getController = (): Responder<object> =>
  async function getController(c) {
    const config = controllerConfigFrom(c.env ?? {})
    const settings: z.infer<typeof controllerSettings> = {
      steps: config.steps,
      dwell_minutes: config.dwellMinutes,
      clean_windows: config.cleanWindows,
      critical_windows: config.criticalWindows,
      min_rows: config.minRows,
      min_requests: config.minRequests,
      tick_seconds: CONTROLLER_TICK_SECONDS,
    }
    return c.json(settings)
  }

/** The rollout controller's configuration, as the worker's `CONTROLLER_*` vars set it (admin scope). */
export const controllerRoutes = () => [
  route({
    method: 'get',
    path: '/v1/rollout/controller',
    guard: 'admin',
    operationId: 'getRolloutController',
    summary: 'The canary ladder (CONTROLLER_STEPS) and the rules for its next step',
    description: 'What the rollout controller of this edge runs with: its ladder, the dwell and clean windows a step needs, and how often it decides. What the operator console\'s Canary view draws.',
    tag: 'rollout',
    answers: { 200: { description: 'the controller\'s settings', schema: controllerSettings, headers: RATE_LIMIT } },
    handle: answer(getController()),
  }),
] as const
