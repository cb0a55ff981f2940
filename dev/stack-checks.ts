import { createServer } from 'node:net'
import { portHolder } from './lifecycle.ts'

/**
 * What `npm start` checks so that it never reports a stack it did not start: its ports are free
 * before anything starts, and what answers on them afterwards is its own backend (by instance id)
 * and its own edge (by the key only that edge holds).
 */

/** Resolves when nothing listens on 127.0.0.1:`port`; rejects naming the port and the variable that moves it. */
export const assertPortFree = (port: number, variable: string): Promise<void> =>
  new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EADDRINUSE') return reject(new Error(`port ${port} cannot be listened on (${error.code ?? error.message}): set ${variable} to another port`))
      const holder = portHolder(port)
      const earlier = holder && /dev\/leash\.mjs|backend\/server\.ts|wrangler(\.js)? dev|workerd/.test(holder.command)
      reject(new Error(holder
        ? `${earlier ? 'edge-infer from an earlier run' : `\`${holder.command.slice(0, 120)}\``} (pid ${holder.pid}) holds port ${port}; stop it with \`kill -- -${holder.pgrp}\`, or set ${variable} to another port`
        : `port ${port} is already in use: stop what holds it, or set ${variable} to another port`))
    })
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve()))
  })

export interface Poll {
  /** Attempts before giving up, and the pause between them: every wait has a bound. */
  tries?: number
  everyMs?: number
  /** Stops polling early (the stack is going down). */
  cancelled?: () => boolean
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Polls `check` until it returns a verdict: `true` (confirmed) ends the wait, a string is a
 * definite refusal (thrown as the error), `undefined` means not yet (nothing answers, or not ready).
 */
const pollFor = async (what: string, check: () => Promise<true | string | undefined>, { tries = 600, everyMs = 200, cancelled = () => false }: Poll): Promise<void> => {
  for (let i = 0; i < tries && !cancelled(); i++) {
    const verdict = await check().catch(() => undefined)
    if (verdict === true) return
    if (typeof verdict === 'string') throw new Error(verdict)
    await pause(everyMs)
  }
  throw new Error(cancelled() ? `stopped while waiting for ${what}` : `${what} did not come up after ${tries} tries ${everyMs} ms apart`)
}

const REQUEST_TIMEOUT_MS = 2_000

/** Waits until the backend at `url` is ready and answers with `instanceId`; a ready server with another id is refused at once. */
export const confirmBackend = (url: string, instanceId: string, poll: Poll = {}): Promise<void> =>
  pollFor(`the backend at ${url}`, async () => {
    const res = await fetch(`${url}/v2/health/ready`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    const body = (await res.json().catch(() => undefined)) as { instance_id?: unknown } | undefined
    if (body?.instance_id !== undefined && body.instance_id !== instanceId) return `${url} answers, but it is another backend (instance ${JSON.stringify(body.instance_id)}), not the one this command started`
    if (!res.ok) return undefined
    return body?.instance_id === instanceId ? true : `${url} answers as ready, but it is not the backend this command started (no instance id)`
  }, poll)

/**
 * Waits until the edge at `url` is up, then checks that it accepts `key`, which only the worker
 * this command configured knows: a foreign server, or an edge with other keys, is refused.
 */
export const confirmEdge = (url: string, key: string, poll: Poll = {}): Promise<void> =>
  pollFor(`the edge at ${url}`, async () => {
    const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    await health.arrayBuffer()
    if (!health.ok) return undefined
    const res = await fetch(`${url}/v1/models`, { headers: { 'x-api-key': key }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    await res.arrayBuffer()
    if (res.status === 401 || res.status === 403) return `${url} answers, but refuses this command's API key (${res.status}): it is not the edge this command started`
    return res.ok ? true : undefined
  }, poll)
