import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'vitest'
import type { EdgeClient } from '../../../support/client.ts'

/** Starts `server` on a free loopback port: its URL, and a close that drops open connections first. */
export const listen = async (server: Server): Promise<{ url: string; close(): Promise<unknown> }> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(resolve))
    },
  }
}

type Call = Parameters<EdgeClient['predict']>

/** Sends `call` until it is answered from the cache (its rows' writes are in the background), at most 40 times. */
export const untilHit = async (app: EdgeClient, ...call: Call) => {
  for (let i = 0; i < 40; i++) {
    const res = await app.predict(...call)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    if (res.headers.get('x-cache') === 'HIT') return res
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error('never answered from the cache')
}

/** The sum of the edge's `/metrics` samples whose line starts with `prefix`. */
export const metricSum = async (ops: EdgeClient, prefix: string): Promise<number> => {
  const text = await (await ops.api.GET('/metrics', { parseAs: 'text' })).data!
  return text.split('\n').filter((l) => l.startsWith(prefix)).reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0)
}
