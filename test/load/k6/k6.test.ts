import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SCENARIO_NAMES } from '../../../load/scenarios/index.js'
import { startLocalStack, type LocalStack } from '../../../load/harness/stack.ts'
import { cleanUp } from '../../../load/harness/processes.ts'
import { recording, resetRecording, setGlobals, stopShim } from '../support/k6-shim.ts'
import { k6OptionProblems } from '../support/k6-options.ts'

// The k6 modules resolve to the SHIM (test/load/support/k6-shim.ts): k6 is not installable here.
vi.mock('k6', async () => (await import('../support/k6-shim.ts')).k6)
vi.mock('k6/http', async () => ({ default: (await import('../support/k6-shim.ts')).http }))
vi.mock('k6/metrics', async () => (await import('../support/k6-shim.ts')).metrics)

interface K6Script {
  options: Record<string, unknown>
  setup(): unknown
  default(data: unknown): void
}

const SCRIPTS = new URL('../../../load/k6/', import.meta.url)
// A path tsc does not follow: the scripts are type-checked against k6's globals by load/k6/tsconfig.json.
const importScript = async (name: string): Promise<K6Script> => (await import(/* @vite-ignore */ new URL(`${name}.js`, SCRIPTS).href)) as K6Script

describe('k6 scripts (run through a k6-API shim against the local stack)', () => {
  let stack: LocalStack
  beforeAll(async () => {
    stack = await startLocalStack()
  })
  afterAll(async () => {
    await stopShim()
    await stack?.stop()
    await cleanUp()
  })

  it.each(SCENARIO_NAMES)('%s: options k6 accepts, thresholds from the SLA', async (name) => {
    setGlobals({ TARGET: stack.edgeUrl, API_KEY: stack.apiKey })
    const script = await importScript(name)
    expect(k6OptionProblems(script.options, recording.metrics)).toEqual([])
    expect(Object.keys(script.options.thresholds as object)).toEqual(['http_req_duration{expected_response:true}', 'http_req_failed'])
  })

  it('steady: every request it sends is answered as its input deserves, tagged by variant', async () => {
    const env = { TARGET: stack.edgeUrl, API_KEY: stack.apiKey, SEED: '7' }
    setGlobals(env)
    const script = await importScript('steady')
    resetRecording()
    const data = script.setup()
    expect(recording.requests.map((r) => [r.method, r.response.status])).toEqual([['GET', 200]])
    resetRecording()
    for (let iter = 0; iter < 150; iter++) {
      setGlobals(env, 1, iter)
      script.default(data)
    }
    const predicts = recording.requests
    expect(predicts).toHaveLength(150)
    const refused = predicts.filter((r) => r.tags.kind === 'refused')
    const accepted = predicts.filter((r) => r.tags.kind !== 'refused')
    // The default mix: a few refusals, a few fixes, pins and entity ids that hit and miss.
    expect(refused.length).toBeGreaterThan(0)
    expect(predicts.filter((r) => r.tags.kind === 'fixed').length).toBeGreaterThan(0)
    expect(predicts.filter((r) => r.tags.pinned === 'true').length).toBeGreaterThan(0)
    for (const r of accepted) expect({ status: r.response.status, body: r.response.body.slice(0, 200) }).toMatchObject({ status: 200 })
    for (const r of refused) expect(r.response.status).toBe(400)
    for (const r of predicts) {
      expect(r.url).toBe(`${stack.edgeUrl}/v1/models/credit-risk/predict`)
      expect(r.headers['X-Api-Key']).toBe(stack.apiKey)
      expect(r.expectedStatuses).toEqual([r.tags.kind === 'refused' ? 400 : 200])
    }
    expect(recording.checks.filter((c) => !c.pass)).toEqual([])
    const variants = recording.samples.filter((s) => s.metric === 'predicts_by_variant')
    expect(variants).toHaveLength(150)
    expect(new Set(variants.map((s) => s.tags.variant))).toEqual(new Set(['stable', 'pinned', 'none']))
    expect(variants.filter((s) => s.tags.variant === 'none').every((s) => s.tags.kind === 'refused')).toBe(true)
  })

  it('DURATION and RATE rescale the shape', async () => {
    setGlobals({ TARGET: stack.edgeUrl, API_KEY: stack.apiKey, DURATION: '12', RATE: '40' })
    vi.resetModules()
    const { options } = await importScript('spike')
    const spike = (options.scenarios as Record<string, { stages: Array<{ target: number; duration: string }> }>).spike
    expect(Math.max(...spike.stages.map((s) => s.target))).toBe(40)
    expect(spike.stages.reduce((sum, s) => sum + Number.parseInt(s.duration), 0)).toBeGreaterThanOrEqual(12)
  })
})
