import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'

const manifest = JSON.parse(await readFile('package.json', 'utf8')) as { engines: { node: string }; devDependencies: Record<string, string> }

describe('the runtime', () => {
  it('is the Node that package.json pins (npm scripts put node_modules/.bin first on PATH), not the system one', () => {
    expect(manifest.engines.node).toBe('>=24')
    expect(process.versions.node).toBe(manifest.devDependencies.node)
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(24)
  })
})
