import type { Arm } from '../../rollout/rollout.ts'

/**
 * Requests sent to a stand-in arm because their own arm's version is no longer served, counted
 * per model under its current rollout revision in this isolate. The first of each arm and
 * revision is logged: one line says what happened, however many requests it concerns.
 */
export class Reroutes {
  readonly #byModel = new Map<string, { revision: number; counts: Record<string, number> }>()

  constructor(private readonly log: (line: string) => void = (line) => console.error(line)) {}

  record(model: string, revision: number, from: Pick<Arm, 'variant' | 'version'>, standIn: Pick<Arm, 'variant'>, served: readonly number[]): void {
    let entry = this.#byModel.get(model)
    if (entry?.revision !== revision) this.#byModel.set(model, (entry = { revision, counts: {} }))
    entry.counts[from.variant] = (entry.counts[from.variant] ?? 0) + 1
    if (entry.counts[from.variant] > 1) return
    this.log(JSON.stringify({ level: 'warn', msg: 'arm version not served; its users go to a stand-in arm', model, revision, variant: from.variant, version: from.version, served, stand_in: standIn.variant }))
  }

  /** Rerouted requests per arm under `revision`; none counted yet is an empty object. */
  counts(model: string, revision: number): Record<string, number> {
    const entry = this.#byModel.get(model)
    return entry?.revision === revision ? { ...entry.counts } : {}
  }
}
