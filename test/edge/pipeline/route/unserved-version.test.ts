import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../../../edge/backend-client/catalog.ts'
import type { InferCall } from '../../../../edge/backend-client/transport.ts'
import { withLayout } from '../../../../edge/rollout/bucket-layout.ts'
import { assignArm, rolloutSchema } from '../../../../edge/rollout/rollout.ts'
import { MemoryRolloutStore } from '../../../../edge/stores/rollouts/memory.ts'
import { InProcessBackendStandIn } from '../../../../load/bench/edge/in-process-backend.ts'
import { creditRiskMetadata } from '../../../../load/bench/edge/workload.ts'
import { creditRequest } from '../../../backend/support/applicants.ts'

const MODEL = 'credit-risk'
const USERS = Array.from({ length: 200 }, (_, i) => `user-${i}`)

/** The stand-in backend, recording which version each infer call asked for. */
class RecordingBackend extends InProcessBackendStandIn {
  readonly versions: number[] = []

  override async infer(call: InferCall) {
    this.versions.push(call.version)
    return super.infer(call)
  }
}

/** Stored while version 1 was served: the canary (its baseline stable) and an A/B arm on version 3. */
const rollout = withLayout(rolloutSchema.parse({
  salt: 'exp',
  arms: [{ variant: 'stable', version: 2, weight: 40 }, { variant: 'b', version: 3, weight: 30 }, { variant: 'canary', version: 1, weight: 30 }],
  canary: { variant: 'canary', baseline_variant: 'stable' },
}), undefined)

const key = generateApiKey('test')
const admin = generateApiKey('test')
let backend: RecordingBackend
let rollouts: MemoryRolloutStore
let app: ReturnType<typeof createApp>

beforeAll(async () => {
  // The backend has since stopped serving version 1.
  backend = new RecordingBackend({ ...(await creditRiskMetadata()), versions: ['2', '3'] })
  rollouts = new MemoryRolloutStore()
  await rollouts.compareAndSet(MODEL, 0, rollout)
  app = createApp({
    parts: { keys: new MemoryKeyStore([
      { name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1_000_000 },
      { name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 1_000_000 },
    ]), transport: backend, catalog: new ModelCatalog({ transport: backend }), rollouts },
    log: () => {},
  })
})

afterEach(() => {
  vi.restoreAllMocks()
})

/** Each user's infer call, answered with the variant and version that served it. */
const inferAs = async (user: string) => {
  const res = await app.request(`/v2/models/${MODEL}/infer`, {
    method: 'POST',
    body: JSON.stringify(creditRequest(1)),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-experiment-key': user },
  })
  return { status: res.status, variant: res.headers.get('x-variant'), version: res.headers.get('x-model-version') }
}

const warnings = (spy: { mock: { calls: unknown[][] } }) =>
  spy.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>).filter((line) => line.msg === 'arm version not served; its users go to a stand-in arm')

describe('a rollout naming a version the backend stopped serving', () => {
  it('sends that arm\'s users to its baseline, counts them, logs it once per revision, and leaves the other arms alone', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
    const answers = await Promise.all(USERS.map(inferAs))
    const expected = USERS.map((user) => assignArm(rollout, MODEL, user).variant)
    expect(expected).toContain('canary')
    answers.forEach((answer, i) => {
      expect(answer.status).toBe(200)
      expect([answer.variant, answer.version]).toEqual(expected[i] === 'b' ? ['b', '3'] : ['stable', '2'])
    })
    expect(backend.versions).not.toContain(1)
    expect(warnings(logged)).toEqual([{ level: 'warn', msg: 'arm version not served; its users go to a stand-in arm', model: MODEL, revision: 1, variant: 'canary', version: 1, served: [2, 3], stand_in: 'stable' }])

    await rollouts.compareAndSet(MODEL, 1, rollout)
    await Promise.all(USERS.map(inferAs))
    expect(warnings(logged).map((line) => line.revision)).toEqual([1, 2])
    const shown = await app.request(`/v1/models/${MODEL}/rollout`, { headers: { authorization: `Bearer ${admin}` } })
    expect(((await shown.json()) as { rerouted: unknown }).rerouted).toEqual({ canary: expected.filter((variant) => variant === 'canary').length })
  })
})
