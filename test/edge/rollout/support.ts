import type { ArmWindow, MonitorSource } from '../../../edge/rollout/monitor-source.ts'
import { rolloutSchema, type Canary, type Rollout } from '../../../edge/rollout/rollout.ts'

export const MINUTE = 60_000
export const T0 = Date.UTC(2026, 0, 1)

/** A 20-bin prediction histogram of `rows` rows, skewed towards the high bins by `shift` (0 = the reference shape). */
export const histogram = (rows: number, shift = 0): number[] => {
  const weights = Array.from({ length: 20 }, (_, i) => Math.exp(-((i - 6 - shift) ** 2) / 18) + 0.05)
  const total = weights.reduce((s, w) => s + w, 0)
  return weights.map((w) => Math.round((rows * w) / total))
}

/** A healthy window: `rows` rows in as many requests, nothing failing, the reference histogram. */
export const window = (version: number, overrides: Partial<ArmWindow> = {}): ArmWindow => {
  const rows = overrides.rows ?? 5_000
  return { version, rows, requests: rows, errors: 0, nan_outputs: 0, p95_ms: 12, prediction_counts: histogram(rows), input_drift: 'ok', ...overrides }
}

/** credit-risk with version 2 stable and version 3 as a canary at `weight`. */
export const canaryRollout = (weight: number, canary: Partial<Canary> = {}): Rollout =>
  rolloutSchema.parse({
    salt: 'exp',
    arms: [{ variant: 'stable', version: 2, weight: 100 - weight }, { variant: 'canary', version: 3, weight }],
    canary: { variant: 'canary', baseline_variant: 'stable', step_started_at: T0, ...canary },
  })

export type WindowFor = (version: number, minutes: number, model: string) => ArmWindow

/**
 * A MonitorSource answering from a function of version, window length and model. `pause()`
 * holds every read until `resume()`, to line up concurrent ticks.
 */
export class FakeMonitorSource implements MonitorSource {
  readonly reads: Array<{ model: string; version: number; minutes: number }> = []
  private gate: Promise<void> | undefined
  private open: (() => void) | undefined

  constructor(private readonly windowFor: WindowFor = (version) => window(version)) {}

  async arm(model: string, version: number, minutes: number): Promise<ArmWindow> {
    this.reads.push({ model, version, minutes })
    await this.gate
    return this.windowFor(version, minutes, model)
  }

  pause(): void {
    this.gate = new Promise((resolve) => (this.open = resolve))
  }

  resume(): void {
    this.open?.()
    this.gate = undefined
  }
}
