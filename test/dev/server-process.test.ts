import { describe, expect, it } from 'vitest'
import { portFromEnv } from '../../dev/server-process.ts'

describe('portFromEnv', () => {
  it('defaults, reads and refuses by variable name', () => {
    const fixed = { fallback: 8787, anyFree: false }
    expect(portFromEnv('EDGE_PORT', { ...fixed, env: {} })).toBe(8787)
    expect(portFromEnv('EDGE_PORT', { ...fixed, env: { EDGE_PORT: '9001' } })).toBe(9001)
    expect(() => portFromEnv('EDGE_PORT', { ...fixed, env: { EDGE_PORT: 'http' } })).toThrow('EDGE_PORT="http" is not a port (1-65535)')
    expect(() => portFromEnv('BACKEND_PORT', { fallback: 8000, anyFree: false, env: { BACKEND_PORT: '0' } })).toThrow('BACKEND_PORT="0" is not a port')
    // A dev server's default: any free port.
    expect(portFromEnv('LAMBDA_ENDPOINT_PORT', { env: {} })).toBe(0)
    expect(() => portFromEnv('LAMBDA_ENDPOINT_PORT', { env: { LAMBDA_ENDPOINT_PORT: '70000' } })).toThrow('LAMBDA_ENDPOINT_PORT="70000" is not a port (0-65535)')
  })
})
