import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import type { BackendModelMetadata } from '../../../edge/backend-client/transport.ts'
import type { Rollout } from '../../../edge/rollout/rollout.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { InProcessBackendStandIn } from '../../../load/bench/edge/in-process-backend.ts'
import { creditRiskMetadata } from '../../../load/bench/edge/workload.ts'
import { armsOf, expectSharesOfWeights, expectUsersNear, moves } from '../rollout/movement.ts'

const PATH = '/v1/models/credit-risk/rollout'
const admin = generateApiKey('test')
let app: ReturnType<typeof createApp>
let metadata: BackendModelMetadata

beforeAll(async () => {
  // The backend's metadata for credit-risk (versions 1 and 2) without a backend process.
  metadata = await creditRiskMetadata()
  const standIn = new InProcessBackendStandIn(metadata)
  app = createApp({
    parts: { keys: new MemoryKeyStore([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 100_000 }]), transport: standIn, catalog: new ModelCatalog({ transport: standIn }), rollouts: new MemoryRolloutStore() },
    log: () => {},
  })
})

const send = (method: 'GET' | 'PUT', body?: unknown, headers: Record<string, string> = {}) =>
  app.request(PATH, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, ...headers },
  })

const revision = async () => ((await (await send('GET')).json()) as { revision: number }).revision

/** A GET, or a PUT with If-Match set to the ETag a GET just gave. */
const request = async (method: 'GET' | 'PUT', body?: unknown) =>
  send(method, body, method === 'PUT' ? { 'if-match': (await send('GET')).headers.get('etag')! } : {})

/** PUTs a rollout (with the current ETag) and answers what was stored. */
const put = async (rollout: unknown): Promise<Rollout> => {
  const res = await request('PUT', rollout)
  expect(res.status, await res.clone().text()).toBe(200)
  return ((await res.json()) as { rollout: Rollout }).rollout
}

const stable = (weight: number) => ({ variant: 'stable', version: 2, weight })
const b = (weight: number) => ({ variant: 'b', version: 1, weight })
const canary = (weight: number) => ({ variant: 'canary', version: 1, weight })
const d = (weight: number) => ({ variant: 'd', version: 2, weight })
const abWithCanary = { salt: 'exp', arms: [stable(49), b(50), canary(1)], canary: { variant: 'canary', baseline_variant: 'stable' } }

describe('a PUT that gives only arms and weights (users over 100,000 ids)', () => {
  it('adding an arm takes users only from the arm whose weight it takes', async () => {
    const before = armsOf(await put(abWithCanary))
    const fromStable = await put({ ...abWithCanary, arms: [stable(44), b(50), canary(1), d(5)] })
    const afterStable = armsOf(fromStable)
    expect(Object.keys(moves(before, afterStable))).toEqual(['stable→d'])
    expectUsersNear(moves(before, afterStable)['stable→d'], 5)
    expectSharesOfWeights(fromStable, afterStable)

    const fromB = await put({ ...abWithCanary, arms: [stable(44), b(40), canary(1), d(15)] })
    expect(Object.keys(moves(afterStable, armsOf(fromB)))).toEqual(['b→d'])
    expectUsersNear(moves(afterStable, armsOf(fromB))['b→d'], 10)
  })

  it('reordering arms moves nobody', async () => {
    const before = armsOf(await put({ salt: 'exp', arms: [stable(90), b(10)] }))
    expect(moves(before, armsOf(await put({ salt: 'exp', arms: [b(10), stable(90)] })))).toEqual({})
  })
})

describe('the stored bucket layout', () => {
  it('is derived by the PUT, shown by GET, and accepted back unchanged without moving anyone', async () => {
    const stored = await put(abWithCanary)
    expect(stored.layout).toMatch(/^[0-2]{10000}$/)
    expect(stored.canary?.seed).toMatch(/^[0-9a-f]{16}$/)
    const shown = ((await (await request('GET')).json()) as { rollout: Rollout }).rollout
    expect(shown).toEqual(stored)
    expect(moves(armsOf(stored), armsOf(await put({ ...shown, pinnable: [1] })))).toEqual({})
  })

  it('is refused when it does not give each arm its weight in buckets, or names an arm that is not there', async () => {
    const stored = await put({ salt: 'exp', arms: [stable(90), b(10)] })
    const res = await request('PUT', { ...stored, arms: [stable(80), b(20)] })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ errors: [
      { path: 'layout', message: 'the layout gives arm "stable" 9000 buckets, its weight needs 8000 (omit the layout to derive it from the stored one)' },
      { path: 'layout', message: 'the layout gives arm "b" 1000 buckets, its weight needs 2000 (omit the layout to derive it from the stored one)' },
    ] })
    const unknownArm = await request('PUT', { ...stored, layout: `2${stored.layout!.slice(1)}` })
    expect(await unknownArm.json()).toMatchObject({ status: 400, errors: [{ path: 'layout', message: 'the layout names arm 2; the arms are numbered 0 to 1' }] })
    const short = await request('PUT', { ...stored, layout: '0' })
    expect(await short.json()).toMatchObject({ status: 400, errors: [{ path: 'layout' }] })
  })

  it('needs weights in whole buckets (hundredths of a percent)', async () => {
    const res = await request('PUT', { salt: 'exp', arms: [stable(33.335), b(66.665)] })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ errors: [
      { path: 'arms[0].weight', message: 'weights are in hundredths of a percent (one bucket each), got 33.335' },
      { path: 'arms[1].weight', message: 'weights are in hundredths of a percent (one bucket each), got 66.665' },
    ] })
  })
})

describe('the precondition a PUT needs', () => {
  it('is If-Match: without it the PUT is refused with 428 and a problem body, and nothing changes', async () => {
    const before = await revision()
    const res = await send('PUT', { salt: 'exp', arms: [stable(100)] })
    expect(res.status).toBe(428)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(await res.json()).toMatchObject({
      type: 'https://edge-infer.dev/problems/if-match-required',
      title: 'Precondition Required',
      status: 428,
      detail: 'a rollout PUT must name the revision it replaces: send If-Match with the ETag from GET',
    })
    expect(await revision()).toBe(before)
  })

  it('takes "*" as whatever revision is stored (RFC 9110), and a list of ETags when one of them is current', async () => {
    const before = await revision()
    const star = await send('PUT', { salt: 'exp', arms: [stable(100)] }, { 'if-match': '*' })
    expect(star.status, await star.clone().text()).toBe(200)
    expect(star.headers.get('etag')).toBe(`"r${before + 1}"`)
    const listed = await send('PUT', { salt: 'exp', arms: [stable(90), b(10)] }, { 'if-match': `"r${before - 1}", "r${before + 1}"` })
    expect(listed.status, await listed.clone().text()).toBe(200)
    const stale = await send('PUT', { salt: 'exp', arms: [stable(100)] }, { 'if-match': `"r${before}", "r${before + 1}"` })
    expect(stale.status).toBe(412)
    expect(await revision()).toBe(before + 2)
  })

  it('refuses "*" with 412 while the model has no stored rollout, and an If-Match that is not ETags with 400', async () => {
    const standIn = new InProcessBackendStandIn(metadata)
    const rollouts = new MemoryRolloutStore()
    const fresh = createApp({
      parts: { keys: new MemoryKeyStore([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 100_000 }]), transport: standIn, catalog: new ModelCatalog({ transport: standIn }), rollouts },
      log: () => {},
    })
    const putTo = (ifMatch: string) => fresh.request(PATH, {
      method: 'PUT',
      body: JSON.stringify({ salt: 'exp', arms: [stable(100)] }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, 'if-match': ifMatch },
    })
    expect((await putTo('*')).status).toBe(412)
    const garbage = await putTo('latest')
    expect(garbage.status).toBe(400)
    expect(await garbage.json()).toMatchObject({ detail: 'If-Match must be "*" or ETags from GET, like "r0"' })
    expect((await putTo('"r0"')).status).toBe(200)
  })
})

describe('the versions a PUT may name', () => {
  it('are those the backend serves now, not those the catalog cached', async () => {
    expect(await put({ salt: 'exp', arms: [stable(50), b(50)] })).toMatchObject({ arms: [{ version: 2 }, { version: 1 }] })
    const served = metadata.versions
    metadata.versions = ['2']
    try {
      const res = await request('PUT', { salt: 'exp', arms: [stable(50), b(50)] })
      expect(res.status).toBe(400)
      expect(await res.json()).toMatchObject({ errors: [{ path: 'arms[1].version', message: 'version 1 is not served (served: 2)' }] })
    } finally {
      metadata.versions = served
    }
  })
})

describe('the canary fields the controller keeps', () => {
  it('are refused from a PUT that sets them, each named, and nothing changes', async () => {
    const before = await revision()
    const res = await request('PUT', { ...abWithCanary, canary: { ...abWithCanary.canary, last_reason: 'healthy at 1% for 10 min', step_started_at: 0, critical_streak: 7, clean_streak: 7 } })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ type: 'https://edge-infer.dev/problems/invalid-rollout', errors: [
      { path: 'canary.step_started_at' },
      { path: 'canary.critical_streak' },
      { path: 'canary.clean_streak' },
      { path: 'canary.last_reason' },
    ] })
    expect(await revision()).toBe(before)
  })

  it('may be restated as GET shows them for the running canary, not changed', async () => {
    const stored = await put(abWithCanary)
    expect(await put({ ...stored, pinnable: [1] })).toMatchObject({ canary: stored.canary })
    const moved = await request('PUT', { ...stored, canary: { ...stored.canary, clean_streak: (stored.canary?.clean_streak ?? 0) + 3 } })
    expect(moved.status).toBe(400)
    expect(await moved.json()).toMatchObject({ errors: [{ path: 'canary.clean_streak', message: 'is kept by the rollout controller; a PUT may leave it out or restate the stored value, not set it' }] })
  })
})
