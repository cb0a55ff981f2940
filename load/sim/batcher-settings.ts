import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { modelConfig, type DispatchPolicy } from '../../backend/repository/model-config.ts'
import { ROOT } from '../harness/servers.ts'

/** The dynamic batcher of one replica, in the simulator's units (seconds, rows). */
export interface BatcherSettings {
  /** idle: what is queued leaves at once for a free instance; delay: Triton's preferred sizes and max queue delay. */
  dispatch: DispatchPolicy
  maxBatchSize: number
  maxQueueDelayS: number
  /** Ascending. */
  preferredBatchSizes: readonly number[]
  /** Rows that may wait; one more is refused. */
  maxQueueSize: number
  /** Executor instances: batches that run at once. */
  instances: number
}

/**
 * A model's batching as the backend would run it: its config.json through the backend's own
 * schema, so the schema's defaults apply to whatever the file leaves out.
 */
export const batcherSettingsOf = (model: string, repository = join(ROOT, 'models')): BatcherSettings => {
  const config = modelConfig.parse(JSON.parse(readFileSync(join(repository, model, 'config.json'), 'utf8')))
  const batching = config.dynamic_batching
  if (!batching) throw new Error(`${model} has no dynamic_batching: the simulator models a batching replica`)
  return {
    dispatch: batching.dispatch,
    maxBatchSize: config.max_batch_size,
    maxQueueDelayS: batching.max_queue_delay_us / 1e6,
    preferredBatchSizes: [...batching.preferred_batch_sizes].sort((a, b) => a - b),
    maxQueueSize: batching.max_queue_size,
    instances: config.instance_count,
  }
}
