import type { FeatureStore, StoredFeatures } from '../../../../edge/stores/features/feature-store.ts'
import type { SetTimer } from '../../../../edge/stores/features/cached.ts'

/** A clock the test moves by hand. */
export const manualClock = (start = 1_000_000) => {
  let t = start
  return { now: () => t, advance: (ms: number) => void (t += ms) }
}

/** Timers that fire only when the test says so. */
export const manualTimers = () => {
  const pending = new Set<{ fn: () => void; ms: number }>()
  const setTimer: SetTimer = (fn, ms) => {
    const timer = { fn, ms }
    pending.add(timer)
    return () => pending.delete(timer)
  }
  return {
    setTimer,
    get pending() {
      return pending.size
    },
    /** Fires every pending timer (a read's budget running out). */
    fireAll() {
      for (const timer of [...pending]) {
        pending.delete(timer)
        timer.fn()
      }
    },
  }
}

interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
  reject(error: unknown): void
}

const deferred = <T>(): Deferred<T> => {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/**
 * A FeatureStore the test controls: `mode` says how the next reads behave (answer from `data`,
 * fail, or hang until the test settles them); every call is recorded.
 */
export const scriptedStore = (data: Record<string, StoredFeatures> = {}) => {
  const calls: string[] = []
  const hanging: Array<Deferred<StoredFeatures | undefined>> = []
  const state = { mode: 'answer' as 'answer' | 'fail' | 'hang' | 'throw' }
  const store: FeatureStore = {
    read(entity, id) {
      const key = `${entity}:${id}`
      calls.push(key)
      if (state.mode === 'throw') throw new Error('synchronous failure')
      if (state.mode === 'fail') return Promise.reject(new Error('store down'))
      if (state.mode === 'hang') {
        const d = deferred<StoredFeatures | undefined>()
        hanging.push(d)
        return d.promise
      }
      return Promise.resolve(data[key] === undefined ? undefined : { ...data[key] })
    },
  }
  return { store, calls, hanging, data, state }
}

/** Lets pending promise callbacks run. */
export const flush = () => new Promise<void>((resolve) => setImmediate(resolve))
