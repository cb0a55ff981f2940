import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AbortedError, DeadlineExceededError, FEEDBACK_BATCH, ProblemError, createClient, type EdgeInferClient, type FeedbackItem, type InferRequest, type RolloutPut, type RolloutState,
} from '../../../clients/typescript/src/index.ts'
import { listen, readBody } from '../../../dev/http-server.ts'
import { creditRequest } from '../../backend/support/applicants.ts'
import { MAX_FEEDBACK_ITEMS } from '../../../edge/routes/feedback.ts'
import { startStack, type Stack } from '../../support/stack.ts'

/**
 * The client package against the worker bundled as deployed, in workerd, in front of the real
 * backend and a real redis-server. Each client counts the requests it really sent (its `fetch` is
 * the global one, watched), so "retried" and "not retried" are counted, not inferred. A hop
 * between the worker and the backend holds inference calls whose request id starts with `hold-`,
 * for a call that is still in flight when its deadline passes or its caller aborts.
 */

const MODEL = 'credit-risk'
// The README's quick start request: the model's entity features come from the user's.
const APPLICANT = {
  age: 34, income: 52000, debt_ratio: 0.35, credit_utilization: 0.4, credit_lines: 4, months_employed: 30, loan_amount: 12000,
  loan_term_months: 36, num_late_payments: 1, region: 'north', housing: 'rent', has_default_history: false,
}
const ENTITY = { user_id: 'u-1' }

/** Holds the hop's `hold-` calls unanswered; `onHold` is told when one arrives. */
const startHoldingHop = async (backendUrl: string) => {
  const held: ServerResponse[] = []
  const hop = {
    onHold: () => {},
    url: '',
    close: () => {
      for (const res of held) res.destroy()
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req, 16 << 20)
    if (String(req.headers['x-request-id']).startsWith('hold-')) {
      held.push(res)
      return hop.onHold()
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && k !== 'host' && k !== 'content-length') as Array<[string, string]>)
    const answer = await fetch(`${backendUrl}${req.url}`, { method: req.method, headers, ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body }) })
    res.writeHead(answer.status, Object.fromEntries(answer.headers))
    res.end(Buffer.from(await answer.arrayBuffer()))
  })
  hop.url = await listen(server, 0, '127.0.0.1')
  return hop
}

let stack: Stack
let hop: Awaited<ReturnType<typeof startHoldingHop>>

/** A client with `key` whose requests are counted in `sent`, the statuses answered in `statuses`; `onAnswer` sees each answer first. */
const counted = (key: string | undefined, onAnswer: (answer: Response) => void = () => {}) => {
  const sent: Request[] = []
  const statuses: number[] = []
  const client: EdgeInferClient = createClient({
    baseUrl: stack.worker.url,
    ...(key ? { apiKey: key } : {}),
    fetch: async (request) => {
      sent.push(request.clone())
      const answer = await fetch(request)
      statuses.push(answer.status)
      onAnswer(answer)
      return answer
    },
  })
  return { client, sent, statuses }
}

beforeAll(async () => {
  stack = await startStack({
    redis: { token: 'client-test-token' },
    keys: [
      { name: 'app', scopes: ['predict', 'feedback'], rate_limit_per_minute: 1_000_000 },
      { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 1_000_000 },
      // One request a minute, a key per test: its second call meets a real 429 with a Retry-After of about a minute.
      ...['deadline', 'abort', 'retry'].map((test) => ({ name: `tiny-${test}`, scopes: ['predict'], rate_limit_per_minute: 1 })),
    ],
    between: async (backendUrl) => (hop = await startHoldingHop(backendUrl)),
    worker: { FEEDBACK_MODELS: MODEL },
  })
}, 120_000)

afterAll(async () => {
  await stack?.stop()
})

describe('calls that succeed', () => {
  it('predicts, sending a request id per call (the caller\'s when given) and no deadline header unless asked', async () => {
    const { client, sent } = counted(stack.keys.app)
    const answer = await client.predict(MODEL, { instances: [APPLICANT], entity: ENTITY }, { requestId: 'client-test-1' })
    expect(answer).toMatchObject({ model: MODEL, request_id: 'client-test-1' })
    expect(answer.predictions).toHaveLength(1)
    const other = await client.predict(MODEL, { instances: [APPLICANT], entity: ENTITY }, { version: 1, timeoutMs: 30_000 })
    expect(other.version).toBe('1')
    expect(other.request_id).not.toBe('client-test-1')
    // A resend (a 503 under load) carries its call's id again.
    expect([...new Set(sent.map((r) => r.headers.get('x-request-id')))]).toEqual(['client-test-1', other.request_id])
    expect(sent[0]!.headers.get('x-request-deadline-ms')).toBeNull()
    expect(Number(sent.at(-1)!.headers.get('x-request-deadline-ms'))).toBeGreaterThan(0)
    expect(Number(sent.at(-1)!.headers.get('x-request-deadline-ms'))).toBeLessThanOrEqual(30_000)
  })

  it('infers tensors, lists and describes models', async () => {
    const { client } = counted(stack.keys.app)
    const models = await client.models.list()
    expect(models.models).toContainEqual({ name: MODEL, href: `/v1/models/${MODEL}` })
    const described = await client.models.describe(MODEL)
    expect(described.labels).toEqual(['low_risk', 'high_risk'])
    const tensor = await client.predictTensor(MODEL, { id: 'tensor-1', ...creditRequest(2) } as InferRequest, { version: 2 })
    expect(tensor).toMatchObject({ model_name: MODEL, model_version: '2', id: 'tensor-1' })
  })

  it('sends feedback in batches of the route\'s limit and answers every item\'s result in order', async () => {
    expect(FEEDBACK_BATCH).toBe(MAX_FEEDBACK_ITEMS)
    const { client, sent, statuses } = counted(stack.keys.app)
    const served = await client.predict(MODEL, { instances: [APPLICANT, APPLICANT], entity: ENTITY })
    const items: FeedbackItem[] = [
      { request_id: served.request_id, index: 1, label: 'high_risk' },
      ...Array.from({ length: FEEDBACK_BATCH - 1 }, (_, i) => ({ request_id: `never-served-${i}`, label: 'low_risk' })),
      { request_id: served.request_id, index: 0, label: 'no_such_label' },
    ]
    const answer = await client.feedback(items)
    // Two batches answered, the route's limit and the rest; a send the edge answered 503 or 429 (its store slow under load) was resent as it was.
    const sends = await Promise.all(sent.map(async (r, i) => ({ path: new URL(r.url).pathname, status: statuses[i], items: r.method === 'POST' ? ((await r.json()) as unknown[]).length : 0 })))
    const feedback = sends.filter((f) => f.path === '/v1/feedback')
    expect(feedback.filter((f) => f.status === 200).map((f) => f.items)).toEqual([FEEDBACK_BATCH, 1])
    for (const refused of feedback.filter((f) => f.status !== 200)) expect([429, 503]).toContain(refused.status)
    expect(answer).toMatchObject({ accepted: 1, unknown_or_expired: FEEDBACK_BATCH - 1, invalid_label: 1, duplicate: 0, invalid_index: 0 })
    expect(answer.results).toHaveLength(items.length)
    expect(answer.results[0]).toMatchObject({ request_id: served.request_id, index: 1, result: 'accepted' })
    expect(answer.results.at(-1)).toMatchObject({ request_id: served.request_id, index: 0, result: 'invalid_label' })
  })

  it('reads quality per version', async () => {
    const { client } = counted(stack.keys.ops)
    const quality = await client.quality(MODEL, { window: '60m' })
    expect(quality).toMatchObject({ model: MODEL })
  })
})

describe('rollout.update', () => {
  it('lands two concurrent updates: the one that loses the If-Match race re-reads, changes what is stored now, and writes again', async () => {
    const { client, sent, statuses } = counted(stack.keys.ops)
    const before = await client.rollout.get(MODEL)
    // Both changes read the same revision before either writes: the race is certain, not left to timing.
    let release = () => {}
    const bothRead = new Promise<void>((resolve) => (release = resolve))
    const calls = { a: 0, b: 0 }
    const appending = (tag: 'a' | 'b') => async (current: RolloutState): Promise<RolloutPut> => {
      calls[tag]++
      if (calls.a + calls.b === 2) release()
      if (calls[tag] === 1) await bothRead
      return { salt: `${current.rollout.salt}+${tag}`, arms: current.rollout.arms }
    }
    const [a, b] = await Promise.all([client.rollout.update(MODEL, appending('a')), client.rollout.update(MODEL, appending('b'))])
    const revisions = [a.state.revision, b.state.revision].sort()
    expect(revisions).toEqual([before.state.revision + 1, before.state.revision + 2])
    // One change ran twice: once on the revision it lost, once on the winner's.
    expect(calls.a + calls.b).toBe(3)
    const after = await client.rollout.get(MODEL)
    expect(after.etag).toBe(`"r${before.state.revision + 2}"`)
    expect(after.state.rollout.salt).toMatch(new RegExp(`^${before.state.rollout.salt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\+(a\\+b|b\\+a)$`))
    // The writes that landed were made against the first revision and the winner's; the loser's first was refused with 412
    // (a PUT answered 503 under load is resent as it is: If-Match keeps that safe).
    const puts = sent.map((r, i) => ({ method: r.method, ifMatch: r.headers.get('if-match'), status: statuses[i] })).filter((p) => p.method === 'PUT')
    expect(puts.filter((p) => p.status === 200).map((p) => p.ifMatch).sort()).toEqual([before.etag, `"r${before.state.revision + 1}"`].sort())
    expect(puts.filter((p) => p.status === 412 && p.ifMatch === before.etag)).toHaveLength(1)
  })

  it('gives up after its rounds with the 412 problem', async () => {
    const { client } = counted(stack.keys.ops)
    const other = counted(stack.keys.ops).client
    // Every round, someone else writes between this read and this write.
    const error = await client.rollout.update(MODEL, async (current) => {
      await other.rollout.update(MODEL, (now) => ({ salt: `${now.rollout.salt}!`, arms: now.rollout.arms }))
      return { salt: current.rollout.salt, arms: current.rollout.arms }
    }, { rounds: 2 }).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(ProblemError)
    expect(error).toMatchObject({ status: 412, type: 'https://edge-infer.dev/problems/rollout-conflict' })
  })
})

describe('refusals that are not retried', () => {
  it('surfaces a 400 problem with its field paths, sent once', async () => {
    const { client, sent } = counted(stack.keys.app)
    const error = await client.predict(MODEL, { instances: [{ ...APPLICANT, age: 'old' }], entity: ENTITY }).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(ProblemError)
    const problem = error as ProblemError
    expect(problem).toMatchObject({ status: 400, name: 'ProblemError' })
    expect(problem.type).toMatch(/^https:\/\/edge-infer\.dev\/problems\//)
    expect(problem.detail).toBeTruthy()
    expect(problem.fieldPaths.some((p) => p.startsWith('instances.0') || p.startsWith('instances[0]'))).toBe(true)
    expect(problem.requestId).toBe(sent[0]!.headers.get('x-request-id'))
    expect(sent).toHaveLength(1)
  })

  it('does not retry a 401 or a 404', async () => {
    const anonymous = counted('ei_test_not-a-key')
    await expect(anonymous.client.models.list()).rejects.toMatchObject({ name: 'ProblemError', status: 401 })
    expect(anonymous.sent).toHaveLength(1)
    const known = counted(stack.keys.app)
    await expect(known.client.models.describe('no-such-model')).rejects.toMatchObject({ status: 404 })
    await expect(known.client.predict('no-such-model', { instances: [APPLICANT], entity: ENTITY })).rejects.toMatchObject({ status: 404 })
    expect(known.sent).toHaveLength(2)
  })
})

describe('deadlines and aborts of a call in flight', () => {
  /** Nothing was sent after the send the hop held (never answered); any before it were refusals a prediction is resent after (503 under load). */
  const expectHeldLast = (sent: Request[], statuses: number[]) => {
    expect(statuses).toHaveLength(sent.length - 1)
    for (const status of statuses) expect([429, 503]).toContain(status)
  }

  it('fails a call whose deadline passes while the backend holds it with DeadlineExceededError, sent once', async () => {
    const { client, sent, statuses } = counted(stack.keys.app)
    const error = await client.predict(MODEL, { instances: [APPLICANT], entity: ENTITY }, { requestId: 'hold-deadline-1', timeoutMs: 1_000 }).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(DeadlineExceededError)
    expectHeldLast(sent, statuses)
    expect(sent[0]!.headers.get('x-request-deadline-ms')).toMatch(/^\d+$/)
  })

  it('fails a call its caller aborts in flight with AbortedError, sent once', async () => {
    const { client, sent, statuses } = counted(stack.keys.app)
    const controller = new AbortController()
    hop.onHold = () => controller.abort()
    const error = await client.predict(MODEL, { instances: [APPLICANT], entity: ENTITY }, { requestId: 'hold-abort-1', signal: controller.signal }).catch((err: unknown) => err)
    hop.onHold = () => {}
    expect(error).toBeInstanceOf(AbortedError)
    expectHeldLast(sent, statuses)
    // Aborted before it starts: nothing is sent.
    const none = counted(stack.keys.app)
    await expect(none.client.models.list({ signal: controller.signal })).rejects.toBeInstanceOf(AbortedError)
    expect(none.sent).toHaveLength(0)
  })
})

describe('a real 429 with Retry-After (a key allowed one request a minute)', () => {
  /** Spends the key's one request of the minute: its next call is refused for about a minute. */
  const spend = async (key: string) => expect((await createClient({ baseUrl: stack.worker.url, apiKey: key }).models.list()).models.length).toBeGreaterThan(0)

  it('does not wait past the deadline: DeadlineExceededError carrying the 429, sent once', async () => {
    await spend(stack.keys['tiny-deadline']!)
    const { client, sent } = counted(stack.keys['tiny-deadline'])
    const error = await client.predict(MODEL, { instances: [APPLICANT], entity: ENTITY }, { timeoutMs: 5_000 }).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(DeadlineExceededError)
    const refusal = (error as DeadlineExceededError).cause
    expect(refusal).toBeInstanceOf(ProblemError)
    expect(refusal).toMatchObject({ status: 429 })
    expect((refusal as ProblemError).retryAfterMs).toBeGreaterThan(5_000)
    expect(sent).toHaveLength(1)
  })

  it('stops waiting when the caller aborts during the wait: AbortedError, sent once', async () => {
    await spend(stack.keys['tiny-abort']!)
    const controller = new AbortController()
    // The refusal has come: the client is about to wait its Retry-After.
    const { client, sent } = counted(stack.keys['tiny-abort'], (answer) => answer.status === 429 && controller.abort())
    await expect(client.predict(MODEL, { instances: [APPLICANT], entity: ENTITY }, { signal: controller.signal })).rejects.toBeInstanceOf(AbortedError)
    expect(sent).toHaveLength(1)
  })

  it('waits the Retry-After and then succeeds: two sends, the second admitted', async () => {
    await spend(stack.keys['tiny-retry']!)
    const { client, statuses } = counted(stack.keys['tiny-retry'])
    const answer = await client.predict(MODEL, { instances: [APPLICANT], entity: ENTITY }, { timeoutMs: 120_000 })
    expect(answer.predictions).toHaveLength(1)
    // The limiter admits the resend only once the window has room: it came after the Retry-After, and only once
    // (a 503 under load between is resent too).
    expect(statuses[0]).toBe(429)
    expect(statuses.slice(1).filter((status) => status !== 503)).toEqual([200])
  }, 120_000)
})
