import { parentPort } from 'node:worker_threads'
import type { WorkerRequest } from '../../../backend/executor/messages.ts'

/** A batch whose first value is this makes the thread die before it runs (a native crash, as the executor sees it). */
export const CRASH_VALUE = -12_345

/** The real inference worker, in a thread that exits when a batch starts with CRASH_VALUE (tests import only the constant). */
if (parentPort) {
  parentPort.on('message', (message: WorkerRequest) => {
    if (message.type === 'run' && Object.values(message.feeds)[0]?.data[0] === CRASH_VALUE) process.exit(70)
  })
  await import('../../../backend/executor/worker.ts')
}
