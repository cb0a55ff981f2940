import { parentPort, workerData } from 'node:worker_threads'
import type { WorkerInit, WorkerReply, WorkerRequest } from './messages.ts'
import { ModelSession } from './session.ts'

// One onnxruntime session per thread: a run holds the thread it runs on, so a compute-bound
// model leaves the server's event loop free only if inference happens here.
const port = parentPort
if (!port) throw new Error('worker.ts must run in a worker thread')

// onnxruntime-common turns float16 data into a Float16Array wherever the runtime has one, and
// onnxruntime-node's binding cannot read that type; without it, FP16 tensors cross as their bits.
Reflect.deleteProperty(globalThis, 'Float16Array')
const reply = (message: WorkerReply) => port.postMessage(message)

try {
  const session = ModelSession.create(workerData as WorkerInit)
  reply({ type: 'ready', provider: session.provider, inputNames: session.inputNames, outputNames: session.outputNames })
  port.on('message', (message: WorkerRequest) => {
    if (message.type === 'close') {
      session.release()
      port.close()
      return
    }
    try {
      const { outputs, computeUs } = session.run(message.feeds, message.outputs)
      reply({ type: 'result', id: message.id, outputs, computeUs })
    } catch (err) {
      reply({ type: 'failed', id: message.id, message: err instanceof Error ? err.message : String(err) })
    }
  })
} catch (err) {
  reply({ type: 'failed', message: err instanceof Error ? err.message : String(err) })
}
