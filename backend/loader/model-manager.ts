import { performance } from 'node:perf_hooks'
import { InferenceError, notFound, unavailable } from '../errors.ts'
import { errorFields, type Logger } from '../logger.ts'
import type { DriftMonitor } from '../monitor/drift/monitor.ts'
import type { Metrics } from '../monitor/metrics.ts'
import type { Tracing } from '../monitor/tracing/index.ts'
import type { ModelConfig } from '../repository/model-config.ts'
import { CONFIG_FILE, type ModelOnDisk, type Repository } from '../repository/repository.ts'
import { ModelVersion, configRefused, versionNotReady, type LoadOptions } from './model-version.ts'
import { quoteInput } from '../../shared/quote-input.ts'

export interface ModelManagerOptions extends Omit<LoadOptions, 'onBroken'> {
  memoryBudgetBytes: number
  logger: Logger
  metrics?: Metrics
  drift?: DriftMonitor
  tracing?: Tracing
  /** Waits between load attempts of a model that does not serve: `firstMs`, doubled per failure up to `maxMs`. */
  retryBackoff?: { firstMs: number; maxMs: number }
  /** Clock of the backoff, in ms (tests). */
  now?: () => number
}

export const DEFAULT_RETRY_BACKOFF = { firstMs: 1_000, maxMs: 60_000 }

/** What a load did to one version of the model. */
export interface VersionOutcome {
  version: number
  /**
   * `loaded`: a fresh copy serves now; `kept`: the serving copy already matches the disk, or a
   * version the policy no longer selects serves on until its successors are ready; `refused`:
   * its files do not verify; `failed`: they verify but did not load; `retired`: no longer selected.
   */
  state: 'loaded' | 'kept' | 'refused' | 'failed' | 'retired'
  reason?: string
  /** For `refused` and `failed`: an earlier copy of the version serves on. */
  serving_previous?: boolean
}

/** The answer to a load: `ok` unless nothing serves or none of the versions that needed loading loaded. */
export interface LoadReport {
  model: string
  ok: boolean
  /** Why the model as a whole could not load (its config, or the repository unreadable). */
  error?: string
  versions: VersionOutcome[]
}

/** Readiness, and while not ready, what it waits for. */
export interface Readiness {
  ready: boolean
  waiting: string[]
}

/** One row of the repository index (Triton's shape: name, version, state, reason). */
export interface IndexEntry {
  name: string
  version?: string
  state: 'READY' | 'LOADING' | 'UNAVAILABLE'
  reason: string
  provider?: string
  pinned?: boolean
}

interface ModelSlot {
  name: string
  config?: ModelConfig
  /** JSON of the config the serving versions were loaded with: a change reloads them. */
  configKey?: string
  serving: Map<number, ModelVersion>
  /** Why a version is not serving (or why its on-disk copy was refused while an older copy serves). */
  failures: Map<number, string>
  error?: string
  /** `error` is the repository's refusal of config.json: the model's owner must fix it, no retry will. */
  configRefused?: boolean
  /** Serializes loads, reloads and unloads of this model. */
  queue: Promise<void>
  loading: boolean
  /** Unloaded by an operator: stays unloaded until loaded again (no lazy load). */
  unloaded: boolean
  /** The first load has finished (successfully or not): readiness waits for it. */
  settled: boolean
  /**
   * Set while the model does not serve (or a serving version is broken): failed attempts so far
   * and when the next may start. Requests meanwhile get 503 with the time left as Retry-After;
   * with `timer`, the attempt starts unasked.
   */
  retry?: { failures: number; at: number; timer?: NodeJS.Timeout }
}

const VERSION = /^[1-9][0-9]{0,8}$/

/** A version named in a path, as a number; 400 for anything that is not one. */
const parseVersion = (version: string | undefined): number | undefined => {
  if (version === undefined) return undefined
  if (!VERSION.test(version)) throw new InferenceError(400, `version ${quoteInput(version)} is not a version number (a positive integer of at most 9 digits)`, {}, 'invalid_request')
  return Number(version)
}

/** Why a version the policy no longer selects still serves. */
const servingUntil = (successors: number[]): string =>
  `not selected by the version policy; serving until version${successors.length > 1 ? 's' : ''} ${successors.join(', ')} ${successors.length > 1 ? 'are' : 'is'} ready`

/**
 * The loader: brings model versions from the repository into service and out again. Models
 * load lazily on first use (pinned ones at start), new versions load beside the serving ones
 * and take traffic only when warm, and the least recently used models are unloaded when the
 * estimated memory exceeds the budget.
 */
export class ModelManager {
  private readonly slots = new Map<string, ModelSlot>()
  /** Pinned models, known once start() has read the repository; until then nothing is ready. */
  private pinned: string[] | undefined
  private shuttingDown = false
  private readonly now: () => number
  private readonly backoff: { firstMs: number; maxMs: number }
  private readonly loadOptions: LoadOptions

  constructor(readonly repository: Repository, private readonly options: ModelManagerOptions) {
    this.now = options.now ?? Date.now
    this.backoff = options.retryBackoff ?? DEFAULT_RETRY_BACKOFF
    this.loadOptions = { ...options, onBroken: (version) => this.broke(version) }
  }

  /** Loads every pinned model; the server is ready when they all serve. */
  async start(): Promise<void> {
    const names = await this.repository.names()
    // Only the configs: versions are read (and hashed) once, by the load itself.
    const configs = await Promise.all(names.map((n) => this.repository.config(n)))
    const pinned = configs.flatMap((config) => (config?.pinned ? [config.name] : []))
    this.pinned = pinned
    await Promise.all(pinned.map((name) => this.load(name).catch(() => undefined)))
  }

  ready(): boolean {
    return this.readiness().ready
  }

  /**
   * Ready when every pinned model serves and none of its serving versions is broken: a pod whose
   * pinned version answers only 503 leaves the rotation while the manager reloads it.
   */
  readiness(): Readiness {
    if (this.shuttingDown) return { ready: false, waiting: ['shutting down'] }
    if (this.pinned === undefined) return { ready: false, waiting: ['the repository has not been read yet'] }
    const waiting = this.pinned.flatMap((name) => {
      const slot = this.slots.get(name)
      if (!slot || !slot.settled) return [`model "${name}" is loading`]
      const broken = [...slot.serving.values()].flatMap((v) => (v.broken === undefined ? [] : [`model "${name}" version ${v.version} is broken: ${v.broken}`]))
      return broken.length === 0 && this.pick(slot) === undefined ? [`model "${name}" has no version ready`] : broken
    })
    return { ready: waiting.length === 0, waiting }
  }

  /**
   * The version that serves a request when one is resident and ready, without waiting a turn;
   * undefined when `resolve` has to decide (load, refuse, explain).
   */
  resident(name: string, version?: string): ModelVersion | undefined {
    if (this.shuttingDown) return undefined
    const slot = this.slots.get(name)
    if (!slot || slot.unloaded) return undefined
    const chosen = this.pick(slot, parseVersion(version))
    if (chosen) slot.config = slot.config ?? chosen.config
    return chosen
  }

  /** The version that serves a request; loads the model first if it is not resident. */
  async resolve(name: string, version?: string): Promise<ModelVersion> {
    if (this.shuttingDown) throw unavailable('server is shutting down', 1)
    const wanted = parseVersion(version)
    let slot = this.slots.get(name)
    if (!slot) {
      if (!(await this.repository.has(name))) throw await this.unknown(name)
      slot = this.slot(name)
    }
    if (slot.unloaded) throw unavailable(`model "${name}" is unloaded; load it through the repository API`)
    let chosen = this.pick(slot, wanted)
    if (!chosen) {
      // Nothing serves: load, unless an attempt failed and its backoff has not passed.
      const waiting = slot.retry !== undefined && slot.retry.at > this.now()
      if (this.pick(slot) === undefined && !slot.loading && !waiting) void this.attempt(slot)
      await slot.queue
      chosen = this.pick(slot, wanted)
    }
    if (chosen) {
      slot.config = slot.config ?? chosen.config
      return chosen
    }
    const retryAfterS = slot.retry && Math.max(1, Math.ceil((slot.retry.at - this.now()) / 1000))
    // Clients get fixed refusals: the reasons name files, paths and hashes, so they go only to the
    // logs (when the load fails) and the admin's repository index.
    // A refused config.json is no transient fault: the client gets 409 and what is wrong with it
    // (field paths and the owner's values, not paths or hashes of the host).
    if (slot.error && slot.configRefused) throw configRefused(name, slot.error)
    if (slot.error) throw unavailable(`model "${name}" cannot load`, retryAfterS)
    if (wanted !== undefined) {
      const failure = slot.failures.get(wanted)
      if (failure) throw versionNotReady(name, wanted, retryAfterS)
      throw notFound(`model "${name}" has no version ${wanted} available`)
    }
    throw unavailable(`model "${name}" has no version ready`, retryAfterS)
  }

  /**
   * Loads a model, or reloads it from disk beside the serving versions, now (whatever the
   * backoff); says what happened to each version.
   */
  async load(name: string): Promise<LoadReport> {
    if (this.shuttingDown) throw unavailable('server is shutting down', 1)
    if (!(await this.repository.has(name))) {
      // Gone from disk: whatever still serves it is retired.
      const stale = this.slots.get(name)
      if (stale) await this.attempt(stale)
      throw await this.unknown(name)
    }
    const slot = this.slot(name)
    slot.unloaded = false
    const versions = await this.attempt(slot)
    const needed = versions.filter((v) => v.state === 'loaded' || v.state === 'refused' || v.state === 'failed')
    const ok = slot.error === undefined && this.pick(slot) !== undefined && (needed.length === 0 || needed.some((v) => v.state === 'loaded'))
    return { model: name, ok, ...(slot.error === undefined ? {} : { error: slot.error }), versions }
  }

  /** Unloads every version of a model once its accepted requests are answered. */
  async unload(name: string): Promise<void> {
    const slot = this.slots.get(name)
    if (!slot && !(await this.repository.has(name))) throw notFound(`unknown model ${quoteInput(name)}`)
    if (!slot) return
    slot.unloaded = true
    clearTimeout(slot.retry?.timer)
    slot.retry = undefined
    await this.enqueue(slot, () => this.retireAll(slot, 'unloaded'))
  }

  async index(): Promise<IndexEntry[]> {
    const names = [...new Set([...(await this.repository.names()), ...this.slots.keys()])].sort()
    const entries: IndexEntry[] = []
    for (const name of names) {
      const disk = await this.repository.read(name)
      const slot = this.slots.get(name)
      if (!disk || disk.error) {
        entries.push({ name, state: 'UNAVAILABLE', reason: disk?.error ?? 'removed from the repository' })
        continue
      }
      for (const v of disk.versions) entries.push(this.describe(name, disk, v.version, slot))
    }
    return entries
  }

  /** The serving version, if resident, without loading anything; 404 for an unknown model. */
  async serving(name: string, version?: string): Promise<ModelVersion | undefined> {
    const wanted = parseVersion(version)
    const slot = this.slots.get(name)
    if (!slot || (wanted !== undefined && !slot.serving.has(wanted))) {
      if (!(await this.repository.has(name))) throw notFound(`unknown model ${quoteInput(name)}`)
      if (wanted !== undefined && !(await this.repository.versionFolders(name)).includes(wanted)) throw notFound(`model "${name}" has no version ${wanted}`)
    }
    return slot && !this.shuttingDown ? this.pick(slot, wanted) : undefined
  }

  /** Metadata of the version that would serve, with every serving version listed. */
  async metadata(name: string, version?: string) {
    const chosen = await this.resolve(name, version)
    const versions = [...(this.slots.get(name)?.serving.keys() ?? [])].sort((a, b) => a - b).map(String)
    return { chosen, metadata: chosen.metadata(version === undefined ? versions : undefined) }
  }

  /** Rows waiting plus running per serving version. */
  depths(): Array<{ model: string; version: string; depth: number }> {
    return this.servingVersions().map((v) => ({ model: v.model, version: String(v.version), depth: v.batcher.depth }))
  }

  /** Every version serving now, without loading anything. */
  servingVersions(): ModelVersion[] {
    return [...this.slots.values()].flatMap((slot) => [...slot.serving.values()])
  }

  /** Stops admitting and answers everything accepted; resolves when all sessions are released. */
  async shutdown(): Promise<void> {
    this.shuttingDown = true
    for (const slot of this.slots.values()) clearTimeout(slot.retry?.timer)
    await Promise.all([...this.slots.values()].map((slot) => this.enqueue(slot, () => this.retireAll(slot, 'shutdown'))))
  }

  /** 404 for a name the repository does not serve; a folder of that name without config.json is named as such. */
  private async unknown(name: string): Promise<InferenceError> {
    if (await this.repository.lacksConfig(name)) return notFound(`model folder ${quoteInput(name)} has no ${CONFIG_FILE}, so it is not a model of the repository`)
    return notFound(`unknown model ${quoteInput(name)}`)
  }

  private slot(name: string): ModelSlot {
    let slot = this.slots.get(name)
    if (!slot) {
      slot = { name, serving: new Map(), failures: new Map(), queue: Promise.resolve(), loading: false, unloaded: false, settled: false }
      this.slots.set(name, slot)
    }
    return slot
  }

  private pick(slot: ModelSlot, wanted?: number): ModelVersion | undefined {
    if (wanted !== undefined) return slot.serving.get(wanted)
    // Unversioned traffic goes to the newest version that can still run; a broken one answers only when named.
    let newest: ModelVersion | undefined
    for (const v of slot.serving.values()) if (v.broken === undefined && (!newest || v.version > newest.version)) newest = v
    return newest
  }

  /** Runs lifecycle work for a model after what is already queued; never rejects (a fault is the model's error). */
  private enqueue(slot: ModelSlot, work: () => Promise<unknown>): Promise<void> {
    const run = async () => {
      slot.loading = true
      try {
        await work()
      } catch (err) {
        slot.error = `repository could not be read: ${(err as Error).message}`
        this.options.logger.error('model lifecycle step failed', { model: slot.name, ...errorFields(err) })
      } finally {
        slot.loading = false
      }
    }
    slot.queue = slot.queue.then(run, run)
    return slot.queue
  }

  /** One sync in the model's turn, then its retry schedule; resolves with what happened per version. */
  private attempt(slot: ModelSlot): Promise<VersionOutcome[]> {
    let outcomes: VersionOutcome[] = []
    return this.enqueue(slot, async () => {
      try {
        outcomes = await this.sync(slot)
      } finally {
        this.scheduleRetry(slot)
      }
    }).then(() => outcomes)
  }

  /**
   * After an attempt: a model that serves with no broken version needs no retry; otherwise the
   * next attempt may start after the backoff, and starts by itself for a pinned model or a
   * broken version (no traffic would ask for them: readiness is off, or the version is avoided).
   */
  private scheduleRetry(slot: ModelSlot): void {
    clearTimeout(slot.retry?.timer)
    const broken = [...slot.serving.values()].some((v) => v.broken !== undefined)
    if (this.shuttingDown || slot.unloaded || this.slots.get(slot.name) !== slot || (!broken && this.pick(slot) !== undefined)) {
      slot.retry = undefined
      return
    }
    const failures = (slot.retry?.failures ?? 0) + 1
    const waitMs = Math.min(this.backoff.firstMs * 2 ** (failures - 1), this.backoff.maxMs)
    slot.retry = { failures, at: this.now() + waitMs }
    if (broken || this.pinned?.includes(slot.name)) {
      slot.retry.timer = setTimeout(() => void this.attempt(slot), waitMs)
      slot.retry.timer.unref()
    }
  }

  /** A serving version lost its last inference instance: shown in metrics and readiness, reloaded with backoff. */
  private broke(version: ModelVersion): void {
    const slot = this.slots.get(version.model)
    // A copy already replaced or retired is nobody's concern.
    if (slot?.serving.get(version.version) !== version) return
    const labels = { model: version.model, version: String(version.version) }
    this.options.metrics?.versionBroken.set(labels, 1)
    this.options.logger.error('model version broken; reloading it with backoff', { ...labels, reason: version.broken })
    if (slot.retry === undefined) this.scheduleRetry(slot)
  }

  /** Makes the serving set match the repository: loads new or changed versions beside the old, retires the rest. */
  private async sync(slot: ModelSlot): Promise<VersionOutcome[]> {
    const disk = await this.repository.read(slot.name)
    if (!disk) {
      await this.retireAll(slot, 'removed from the repository')
      this.slots.delete(slot.name)
      return []
    }
    if (disk.config === undefined) {
      slot.error = disk.error
      slot.configRefused = true
      this.options.logger.warn('model config refused', { model: slot.name, reason: disk.error })
      return []
    }
    slot.error = undefined
    slot.configRefused = undefined
    const config = disk.config
    const configKey = JSON.stringify(config)
    const configChanged = slot.configKey !== undefined && slot.configKey !== configKey
    // Newest first: it is the one unversioned traffic goes to.
    const targets = disk.versions.filter((v) => v.selected).sort((a, b) => b.version - a.version)
    const outcomes: VersionOutcome[] = []
    for (const target of targets) {
      const { version } = target
      const current = slot.serving.get(version)
      const servingPrevious = current !== undefined && current.broken === undefined
      if (!target.verified) {
        slot.failures.set(version, target.reason)
        outcomes.push({ version, state: 'refused', reason: target.reason, serving_previous: servingPrevious })
        this.options.logger.warn('model version refused', { model: slot.name, version, reason: target.reason, serving_previous: servingPrevious })
        continue
      }
      if (servingPrevious && current.disk.digest === target.digest && !configChanged) {
        slot.failures.delete(version)
        outcomes.push({ version, state: 'kept' })
        continue
      }
      try {
        const fresh = await ModelVersion.load(slot.name, config, target, this.loadOptions)
        slot.serving.set(version, fresh)
        slot.failures.delete(version)
        outcomes.push({ version, state: 'loaded' })
        this.loaded(fresh)
        if (current) void this.retire(current, 'replaced', fresh)
      } catch (err) {
        slot.failures.set(version, (err as Error).message)
        outcomes.push({ version, state: 'failed', reason: (err as Error).message, serving_previous: servingPrevious })
        this.options.logger.error('model version failed to load', { model: slot.name, version, ...errorFields(err) })
      }
    }
    // A version the policy no longer selects serves on until every selected one does: a broken
    // successor must not take down the version it would replace.
    const successorsReady = targets.length > 0 && targets.every((t) => slot.serving.has(t.version))
    for (const [version, serving] of slot.serving) {
      if (targets.some((t) => t.version === version)) continue
      if (!successorsReady) {
        const waitingFor = targets.filter((t) => !slot.serving.has(t.version)).map((t) => t.version)
        outcomes.push({ version, state: 'kept', reason: servingUntil(waitingFor) })
        this.options.logger.warn('keeping a version the policy no longer selects until its successors are ready', { model: slot.name, version, waiting_for: waitingFor })
        continue
      }
      slot.serving.delete(version)
      outcomes.push({ version, state: 'retired', reason: 'not selected by the version policy' })
      void this.retire(serving, 'no longer selected by the version policy')
    }
    slot.config = config
    slot.configKey = configKey
    slot.settled = true
    await this.evictOverBudget(slot.name)
    return outcomes
  }

  private loaded(version: ModelVersion): void {
    const { metrics, logger } = this.options
    logger.info('model version ready', { model: version.model, version: version.version, provider: version.provider, load_seconds: Number(version.loadSeconds.toFixed(3)) })
    metrics?.executionProvider.set({ model: version.model, version: String(version.version), provider: version.provider }, 1)
    metrics?.modelsLoaded.set(this.depths().length)
  }

  /** Drains and releases a version; never rejects, since callers often do not wait for it. */
  private async retire(version: ModelVersion, why: string, successor?: ModelVersion): Promise<void> {
    this.options.logger.info('model version retiring', { model: version.model, version: version.version, why })
    try {
      await version.retire(successor)
    } catch (err) {
      this.options.logger.error('model version did not release cleanly', { model: version.model, version: version.version, ...errorFields(err) })
    }
    this.options.logger.info('model version released', { model: version.model, version: version.version })
    const { metrics } = this.options
    // A copy reloaded in place has the same labels: its series stay.
    const now = this.slots.get(version.model)?.serving.get(version.version)
    const labels = { model: version.model, version: String(version.version) }
    if (now?.provider !== version.provider) metrics?.executionProvider.remove({ ...labels, provider: version.provider })
    if (now?.broken === undefined) metrics?.versionBroken.remove(labels)
    metrics?.modelsLoaded.set(this.depths().length)
  }

  private async retireAll(slot: ModelSlot, why: string): Promise<void> {
    const versions = [...slot.serving.values()]
    slot.serving.clear()
    await Promise.all(versions.map((v) => this.retire(v, why)))
  }

  private async evictOverBudget(keep: string): Promise<void> {
    const resident = () => [...this.slots.values()].filter((s) => s.serving.size > 0)
    const bytes = (s: ModelSlot) => [...s.serving.values()].reduce((n, v) => n + v.sizeBytes, 0)
    const lastUsed = (s: ModelSlot) => Math.max(...[...s.serving.values()].map((v) => v.lastUsed))
    let total = resident().reduce((n, s) => n + bytes(s), 0)
    while (total > this.options.memoryBudgetBytes) {
      const victim = resident()
        .filter((s) => s.name !== keep && !s.config?.pinned)
        .sort((a, b) => lastUsed(a) - lastUsed(b))[0]
      if (!victim) {
        this.options.logger.warn('memory budget exceeded by pinned or in-use models', { resident_bytes: total, budget_bytes: this.options.memoryBudgetBytes })
        return
      }
      total -= bytes(victim)
      this.options.logger.info('evicting least recently used model', { model: victim.name, idle_ms: Math.round(performance.now() - lastUsed(victim)) })
      const versions = [...victim.serving.values()]
      victim.serving.clear()
      for (const v of versions) void this.retire(v, 'evicted to fit the memory budget')
    }
  }

  private describe(name: string, disk: ModelOnDisk, version: number, slot: ModelSlot | undefined): IndexEntry {
    const onDisk = disk.versions.find((v) => v.version === version)
    const serving = slot?.serving.get(version)
    const failure = slot?.failures.get(version) ?? (onDisk && !onDisk.verified ? onDisk.reason : undefined)
    const base = { name, version: String(version), pinned: disk.config?.pinned ?? false }
    if (serving?.broken !== undefined) return { ...base, state: 'UNAVAILABLE', reason: serving.broken }
    if (serving && !onDisk?.selected) {
      const waiting = disk.versions.filter((v) => v.selected && !slot?.serving.has(v.version)).map((v) => v.version)
      return { ...base, state: 'READY', reason: servingUntil(waiting), provider: serving.provider }
    }
    if (serving) {
      const stale = onDisk && onDisk.digest !== serving.disk.digest
      const reason = failure || stale ? `on-disk copy not loaded${failure ? `: ${failure}` : ' yet'}; serving the previously loaded copy` : ''
      return { ...base, state: 'READY', reason, provider: serving.provider }
    }
    if (!onDisk?.selected) return { ...base, state: 'UNAVAILABLE', reason: 'not selected by the version policy' }
    if (failure) return { ...base, state: 'UNAVAILABLE', reason: failure }
    if (slot?.loading) return { ...base, state: 'LOADING', reason: '' }
    if (slot?.unloaded) return { ...base, state: 'UNAVAILABLE', reason: 'unloaded' }
    return { ...base, state: 'UNAVAILABLE', reason: 'not loaded; loads on first request' }
  }
}
