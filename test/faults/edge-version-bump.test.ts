import { cp, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { creditRequest } from '../backend/support/applicants.ts'
import { post, until, type BackendProcess } from '../backend/support/backend-process.ts'
import { DEMO_REPOSITORY, createFixtureRepository, type FixtureRepository } from '../backend/support/fixture-repository.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import { edgeClient, type Schemas } from '../support/client.ts'
import { demoApplicant } from '../../dev/demo-applicant.ts'
import { startEdgeOverBackend, type EdgeOverBackend } from '../support/stack.ts'

const MODEL = 'tiny'
const ADMIN_TOKEN = 'version-bump-admin-token-0123'
let repository: FixtureRepository
let backend: BackendProcess
let worker: RunningWorker
let keys: EdgeOverBackend['keys']
let stop: (() => Promise<void>) | undefined

/** The demo model's version `version` as version `as` of `tiny`. */
const addVersion = (version: number, as: number) => cp(join(DEMO_REPOSITORY, 'credit-risk', String(version)), join(repository.root, MODEL, String(as)), { recursive: true })

beforeAll(async () => {
  repository = await createFixtureRepository({ withDemo: false })
  // The demo model under another name, one version, and the default version policy (the newest one version).
  await addVersion(1, 1)
  const config = JSON.parse(await readFile(join(DEMO_REPOSITORY, 'credit-risk', 'config.json'), 'utf8')) as Record<string, unknown>
  delete config.version_policy
  delete config.pinned
  await writeFile(join(repository.root, MODEL, 'config.json'), JSON.stringify({ ...config, name: MODEL }))
  ;({ backend, worker, keys, stop } = await startEdgeOverBackend({ MODEL_REPOSITORY: repository.root, ADMIN_TOKEN }))
}, 120_000)

afterAll(async () => {
  await stop?.()
  await repository?.remove()
})

const features = demoApplicant(3)
const edge = () => edgeClient(worker.url, { key: keys.predict })
const predict = (user: string) => edge().predict([features], { model: MODEL, entity: { user_id: user } })

describe('a routine version bump through the edge', () => {
  it('answers every request sent right after the backend retired the version the edge\'s catalog still routes to, from the new one', async () => {
    // The edge's catalog learns of v1 and keeps that description for its TTL (60 s).
    const before = await predict('user-0')
    expect(before.status).toBe(200)
    expect(before.headers.get('x-model-version')).toBe('1')

    await addVersion(2, 2)
    expect((await post(`${backend.url}/v2/repository/models/${MODEL}/load`, '', { authorization: `Bearer ${ADMIN_TOKEN}` })).status).toBe(200)
    await until(async () => ((await (await fetch(`${backend.url}/v2/models/${MODEL}`)).json()) as { versions?: string[] }).versions?.join() === '2')

    const answers = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => predict(`user-${i + 1}`)),
      edge().predictTensor(creditRequest(1) as Schemas['InferRequest'], { model: MODEL }),
    ])
    const outcomes = answers.map((res) => ({ status: res.status, version: res.headers.get('x-model-version'), body: res.status === 200 ? '' : JSON.stringify(res.error) }))
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([])
    expect(new Set(outcomes.map((o) => o.version))).toEqual(new Set(['2']))

    // Each request sent off its retired version was counted, under the default rollout (revision 0).
    const rollout = (await edge().rollout.get(MODEL, { key: keys.admin })).body
    expect(rollout.source).toBe('default')
    expect(rollout.rollout.arms.map((a) => a.version)).toEqual([2])
    expect(rollout.rerouted.stable).toBeGreaterThanOrEqual(1)
    expect(rollout.rerouted.stable).toBeLessThanOrEqual(answers.length)
  })

  it('serves a pin to a version loaded since the catalog was fetched, though it has not expired', async () => {
    // A pin to a version the catalog does not list reads it again when it is over a second old: let the last read age.
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    await addVersion(2, 3)
    expect((await post(`${backend.url}/v2/repository/models/${MODEL}/load`, '', { authorization: `Bearer ${ADMIN_TOKEN}` })).status).toBe(200)
    await until(async () => ((await (await fetch(`${backend.url}/v2/models/${MODEL}`)).json()) as { versions?: string[] }).versions?.join() === '3')
    const pinned = await edge().predict([features], { model: MODEL, entity: { user_id: 'user-pinned' }, version: 3 })
    expect(pinned.status).toBe(200)
    expect(pinned.headers.get('x-model-version')).toBe('3')
  })
})
