import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanUp, spawnChild, type Child } from '../../../../load/harness/processes.ts'
import { bundleWorker } from '../../../../load/bench/edge/bundle.ts'
import { startBenchBackend, type BenchBackend } from '../../../../load/bench/edge/versus-peer.ts'
import { WORKERD, capnpString, instructionsVerdict, workerdDirectory } from '../../../../load/bench/edge/workerd-instructions.ts'
import { freePort } from '../../../support/ports.ts'
import { PREDICT_PATH, WARM_USER, predictBody } from '../../../../load/bench/edge/workload.ts'

describe("the config the instruction count runs workerd on", () => {
  it('writes binding texts as capnp strings, and refuses one it could not write faithfully', () => {
    expect(capnpString('[{"hash":"a\\\\b"}]')).toBe('"[{\\"hash\\":\\"a\\\\\\\\b\\"}]"')
    expect(() => capnpString('naïve')).toThrow(/printable ASCII/)
    expect(() => capnpString('two\nlines')).toThrow(/printable ASCII/)
  })

  describe('run by the workerd binary itself (no valgrind here), in front of the real backend', () => {
    let backend: BenchBackend
    let workerd: Child | undefined
    let url: string

    beforeAll(async () => {
      backend = await startBenchBackend()
      const port = await freePort()
      const config = await workerdDirectory(await bundleWorker('load/bench/edge/peer/worker.ts'), backend.bindings.peer, port)
      workerd = spawnChild(WORKERD, ['serve', config], { stdio: ['ignore', 'ignore', 'inherit'] })
      url = `http://127.0.0.1:${port}${PREDICT_PATH}`
      for (const started = Date.now(); Date.now() - started < 60_000; await new Promise((r) => setTimeout(r, 200))) {
        if (await fetch(url, { method: 'POST', body: '{}' }).then(() => true, () => false)) break
      }
    }, 180_000)

    afterAll(async () => {
      await workerd?.stop()
      await backend?.server.stop()
      await cleanUp()
    })

    it('answers a predict with the bench key through the backend, and refuses another key', async () => {
      const ask = (key: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: predictBody(1, WARM_USER) })
      const answered = await ask(backend.key)
      expect(answered.status).toBe(200)
      expect(((await answered.json()) as { predictions: Array<{ label: string }> }).predictions).toHaveLength(1)
      expect((await ask('ei_not_the_bench_key')).status).toBe(401)
    })
  })
})

describe('the instructions verdict', () => {
  const target = { name: 'edge ÷ peer', unit: 'instr', comparator: '≤', target: 1.2 } as const
  it('judges the least repetition of each side, and shows each side\'s least ÷ most as its noise', () => {
    const verdict = instructionsVerdict([{ name: 'edge', perPredict: [1.4e6, 1.3e6], least: 1.3e6 }, { name: 'peer', perPredict: [1.0e6, 1.6e6], least: 1.0e6 }], target)
    expect(verdict.measured).toBeCloseTo(1.3)
    expect(verdict.pass).toBe(false)
    expect(verdict.noise.a).toBeCloseTo(1.3 / 1.4)
    expect(verdict.noise.b).toBeCloseTo(1.0 / 1.6)
    expect(instructionsVerdict([{ name: 'edge', perPredict: [1.1e6], least: 1.1e6 }, { name: 'peer', perPredict: [1e6], least: 1e6 }], target).pass).toBe(true)
  })

  it('never passes a side that was not counted', () => {
    expect(instructionsVerdict([{ name: 'edge', perPredict: [1e6], least: 1e6 }], target).pass).toBe(false)
  })
})
