import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFixtureRepository, type FixtureRepository } from '../../backend/support/fixture-repository.ts'
import { applicant } from '../../backend/support/applicants.ts'
import { startStack, type Stack } from '../../support/stack.ts'

/**
 * Feedback opted in by the model's own config.json, in the bundled worker in real workerd over the
 * real backend, with FEEDBACK_MODELS unset: the block's labels are the ones feedback may post, and
 * a model without a block keeps nothing, as before.
 */

const OPTED = 'credit-risk'
const PLAIN = 'credit-risk-plain'
const LABELS = ['repaid', 'defaulted']

let repository: FixtureRepository
let stack: Stack

beforeAll(async () => {
  repository = await createFixtureRepository()
  // The same model under another name, without the block.
  await cp(join(repository.root, OPTED), join(repository.root, PLAIN), { recursive: true })
  await repository.editConfig(PLAIN, (config) => (config.name = PLAIN))
  await repository.editConfig(OPTED, (config) => (config.feedback = { ttl_seconds: 3_600, labels: LABELS }))
  stack = await startStack({
    backend: { MODEL_REPOSITORY: repository.root },
    keys: [{ name: 'web', scopes: ['predict'] }, { name: 'labels', tenant: 'web', scopes: ['feedback'] }],
  })
}, 120_000)

afterAll(async () => {
  await stack?.stop()
  await repository?.remove()
})

const post = (path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stack.worker.url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers } })

const predict = async (model: string, requestId: string): Promise<void> => {
  const { account_age_months: _a, num_products: _n, ...instance } = applicant(1)
  const res = await post(`/v1/models/${model}/predict`, stack.keys.web!, { instances: [instance], entity: { user_id: 'u-1' } }, { 'x-request-id': requestId })
  expect(res.status, await res.clone().text()).toBe(200)
}

const feedback = async (requestId: string, label: string) => {
  const res = await post('/v1/feedback', stack.keys.labels!, { request_id: requestId, label })
  expect(res.status).toBe(200)
  return ((await res.json()) as { results: Array<{ result: string; detail?: string }> }).results[0]
}

describe('feedback opted in by config.json (FEEDBACK_MODELS unset)', () => {
  it('accepts a label of the block for a prediction of the model that has it', async () => {
    await predict(OPTED, 'opt-in-accepted-1')
    expect(await feedback('opt-in-accepted-1', 'defaulted')).toMatchObject({ result: 'accepted' })
  })

  it('answers invalid_label for a label not in the block, the postprocess\'s own included', async () => {
    await predict(OPTED, 'opt-in-invalid-1')
    expect(await feedback('opt-in-invalid-1', 'high_risk')).toMatchObject({ result: 'invalid_label', detail: expect.stringContaining('"repaid", "defaulted"') })
  })

  it('keeps nothing for a model without the block: its labels are unknown_or_expired, as before', async () => {
    await predict(PLAIN, 'opt-in-plain-1')
    expect(await feedback('opt-in-plain-1', 'high_risk')).toMatchObject({ result: 'unknown_or_expired' })
  })
})
