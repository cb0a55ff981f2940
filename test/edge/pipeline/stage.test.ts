import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import type { AppEnv } from '../../../edge/app.ts'
import { Pipeline, mount } from '../../../edge/pipeline/pipeline.ts'
import { type Responder, type Stage } from '../../../edge/pipeline/stage.ts'

const sets = <K extends string>(key: K, value: string): Stage<object, Record<K, string>> =>
  async function setsKey(c, next) {
    c.set(key, value as never)
    await next()
  }
const reads = <K extends string>(key: K): Stage<Record<K, string>> =>
  async function readsKey(c, next) {
    c.header(`x-${key}`, c.get(key) as string)
    await next()
  }

describe('Pipeline', () => {
  it('runs stages in the order added, mounts the part after a shared prefix, and ends with the responder', async () => {
    const prefix = Pipeline.begin().then(sets('a', 'from-a'))
    const full = prefix.then(sets('b', 'from-b')).then(reads('a')).then(reads('b'))
    expect(full.size).toBe(4)
    expect(full.since(prefix)).toHaveLength(3)
    const app = new Hono<AppEnv>()
    app.use('*', ...prefix.all())
    mount(app, 'GET', '/', full.answer(prefix, (c) => c.json({ a: c.get('a'), b: c.get('b') })))
    const res = await app.request('/')
    expect(await res.json()).toEqual({ a: 'from-a', b: 'from-b' })
    expect([res.headers.get('x-a'), res.headers.get('x-b')]).toEqual(['from-a', 'from-b'])
  })

  it('does not type-check a stage that reads a variable no earlier stage set', () => {
    const begun = Pipeline.begin().then(sets('a', '1'))
    // @ts-expect-error: 'b' is read before any stage sets it
    const misordered = () => begun.then(reads('b'))
    const needsB: Responder<{ b: string }> = (c) => new Response(c.get('b'))
    // @ts-expect-error: nor is the responder's
    const early = () => begun.answer(begun, needsB)
    expect([typeof misordered, typeof early]).toEqual(['function', 'function'])
    expect(begun.then(reads('a')).size).toBe(2)
  })
})
