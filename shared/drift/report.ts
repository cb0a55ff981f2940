import { z } from 'zod'

/** A window's verdict; `insufficient` below the rows a verdict needs, never `ok`. */
export const verdict = z.enum(['ok', 'warning', 'critical', 'insufficient'])

export type Verdict = z.infer<typeof verdict>

/**
 * The part of a version's drift report (`GET /v2/models/{m}/versions/{v}/drift`) that the edge's
 * rollout controller acts on. The backend's report type extends it; the edge checks a report on
 * arrival with it, since a misread number could roll a version back.
 */
export const controllerDriftReport = z.object({
  version: z.number().int().positive(),
  rows: z.number().nonnegative(),
  dataset: z.object({ verdict }),
  prediction: z.object({ counts: z.array(z.number().nonnegative()), nan_outputs: z.number().nonnegative() }),
  health: z.object({ requests: z.number().nonnegative(), errors: z.number().nonnegative(), p95_ms: z.number().nonnegative().nullable() }),
})

export type ControllerDriftReport = z.infer<typeof controllerDriftReport>
