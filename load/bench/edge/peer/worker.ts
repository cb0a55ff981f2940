import { Hono } from 'hono'
import * as z from 'zod'

/**
 * bench:edge's peer: the smallest honest prediction worker, as a competent engineer would write it
 * in an afternoon. It checks the bearer key's SHA-256 against a list, validates the body with zod
 * (built once from the model's feature spec), merges the caller's user features from memory,
 * one-hot encodes, calls the backend's OIP route with a bearer token and turns probabilities into
 * labels. No rate limit, logs, metrics, rollouts or traces: what the edge costs above it is theirs.
 *
 * Bindings: BACKEND_URL, INFER_TOKEN, KEY_HASHES (JSON array of hex SHA-256), MODEL (JSON: name,
 * features, postprocess), USER_FEATURES (JSON: user id → features).
 */
interface Bindings { BACKEND_URL: string; INFER_TOKEN: string; KEY_HASHES: string; MODEL: string; USER_FEATURES: string }
type Feature = { name: string; default?: number | string | boolean } & ({ type: 'number' | 'integer'; min?: number; max?: number } | { type: 'category'; categories: string[] } | { type: 'boolean' })
interface Model { name: string; features: { input: string; features: Feature[] }; postprocess: { output: string; labels: string[]; threshold: number } }
type Row = Record<string, number | string | boolean>

const compile = (env: Bindings) => {
  const model = JSON.parse(env.MODEL) as Model
  const field = (f: Feature) => {
    if (f.type === 'category') return z.enum(f.categories as [string, ...string[]])
    if (f.type === 'boolean') return z.boolean()
    let n = f.type === 'integer' ? z.number().int() : z.number()
    if (f.min !== undefined) n = n.min(f.min)
    if (f.max !== undefined) n = n.max(f.max)
    return n
  }
  const instance = z.object(Object.fromEntries(model.features.features.map((f) => [f.name, field(f)]))).partial()
  const body = z.object({ instances: z.array(instance).min(1).max(64), entity: z.object({ user_id: z.string() }).optional() })
  // A category takes one column per value and one for an unknown value.
  const width = model.features.features.reduce((n, f) => n + (f.type === 'category' ? f.categories.length + 1 : 1), 0)
  const encode = (row: Row, out: number[]) => {
    for (const f of model.features.features) {
      const v = row[f.name] ?? f.default
      if (f.type === 'category') {
        for (const c of f.categories) out.push(v === c ? 1 : 0)
        out.push(f.categories.includes(String(v)) ? 0 : 1)
      } else out.push(Number(v ?? 0))
    }
  }
  return { model, body, width, encode, keys: new Set(JSON.parse(env.KEY_HASHES) as string[]), users: JSON.parse(env.USER_FEATURES) as Record<string, Row> }
}

let compiled: ReturnType<typeof compile> | undefined
const hex = (buf: ArrayBuffer) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('')

const app = new Hono<{ Bindings: Bindings }>()
app.post('/v1/models/:model/predict', async (c) => {
  const { model, body, width, encode, keys, users } = (compiled ??= compile(c.env))
  const key = c.req.header('authorization')?.replace(/^Bearer /, '') ?? ''
  if (!keys.has(hex(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key))))) return c.json({ title: 'Unauthorized' }, 401)
  if (c.req.param('model') !== model.name) return c.json({ title: 'Not Found' }, 404)
  const parsed = body.safeParse(await c.req.json().catch(() => undefined))
  if (!parsed.success) return c.json({ title: 'Bad Request', errors: parsed.error.issues }, 400)
  const { instances, entity } = parsed.data
  const data: number[] = []
  for (const row of instances) encode({ ...(entity ? users[entity.user_id] : undefined), ...row } as Row, data)
  const res = await fetch(`${c.env.BACKEND_URL}/v2/models/${model.name}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${c.env.INFER_TOKEN}` },
    body: JSON.stringify({ inputs: [{ name: model.features.input, shape: [instances.length, width], datatype: 'FP32', data }], outputs: [{ name: model.postprocess.output }] }),
  })
  if (!res.ok) return c.json({ title: 'Bad Gateway', status: res.status }, 502)
  const out = ((await res.json()) as { outputs: Array<{ data: number[] }> }).outputs[0].data
  const { labels, threshold } = model.postprocess
  const predictions = instances.map((_, i) => {
    const probabilities = out.slice(i * labels.length, (i + 1) * labels.length)
    return { label: labels[probabilities[1] >= threshold ? 1 : 0], probabilities: Object.fromEntries(labels.map((l, j) => [l, probabilities[j]])) }
  })
  return c.json({ model: model.name, predictions })
})

export default app
