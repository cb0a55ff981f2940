import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const manifest = JSON.parse(await readFile('package.json', 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> }

/** What runs in production: the backend, the edge worker, what both share, and the container's healthcheck. */
const PRODUCTION = ['backend', 'edge', 'shared', 'infra/container']

const sources = async (dir: string): Promise<string[]> =>
  (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name))

describe('package.json', () => {
  it('keeps onnx-proto (protobufjs 6), which only the model builder and tests use, out of the production dependencies', async () => {
    expect(manifest.dependencies).not.toHaveProperty('onnx-proto')
    expect(manifest.devDependencies['onnx-proto']).toBe('8.0.1')
    const files = (await Promise.all(PRODUCTION.map(sources))).flat()
    const importing = []
    for (const file of files) if (/from 'onnx-proto'/.test(await readFile(file, 'utf8'))) importing.push(file)
    expect(importing).toEqual([])
  })
})
