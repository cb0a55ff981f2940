import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { LOCAL_DEV_KEY, addLocalKey, localDevKey, readLocalKeys } from '../../dev/local-keys.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'

const fresh = () => join(mkdtempSync(join(tmpdir(), 'local-keys-')), '.dev.keys.json')

describe('the local stack keys file', () => {
  it('makes the local dev key once and gives the same one on every later start, owner-readable only', async () => {
    const file = fresh()
    const first = await localDevKey({ file })
    const again = await localDevKey({ file })
    expect(again.key).toBe(first.key)
    expect(first.entries).toEqual([expect.objectContaining({ name: LOCAL_DEV_KEY, hash: await hashApiKey(first.key), scopes: ['predict', 'admin', 'feedback'] })])
    expect(statSync(file).mode & 0o777).toBe(0o600)
  })

  it('keeps an added key across starts, and --fresh-key replaces only the dev key', async () => {
    const file = fresh()
    const { key } = await localDevKey({ file })
    const added = generateApiKey('local')
    addLocalKey(added, { name: 'web', hash: await hashApiKey(added), scopes: ['predict'], rate_limit_per_minute: 60 }, file)
    expect((await localDevKey({ file })).entries.map((e) => e.name)).toEqual([LOCAL_DEV_KEY, 'web'])
    const replaced = await localDevKey({ file, fresh: true })
    expect(replaced.key).not.toBe(key)
    expect(replaced.entries.map((e) => e.name).sort()).toEqual([LOCAL_DEV_KEY, 'web'])
    expect(() => addLocalKey(added, { name: 'web', hash: '0'.repeat(64), scopes: ['predict'], rate_limit_per_minute: 60 }, file)).toThrow(/already holds a key named "web"/)
  })

  it('gives concurrent first starts one and the same key', async () => {
    const file = fresh()
    const keys = await Promise.all(Array.from({ length: 4 }, () => localDevKey({ file })))
    expect(new Set(keys.map((k) => k.key)).size).toBe(1)
    expect(readLocalKeys(file).keys).toHaveLength(1)
  })

  it('refuses a file that is not a keys file, naming it and the way out', () => {
    const file = fresh()
    writeFileSync(file, '{"keys": "nope"}')
    expect(() => readLocalKeys(file)).toThrow(new RegExp(`${file.replace(/[.]/g, '\\.')} is not a local keys file .*--fresh-key`))
    expect(readFileSync(file, 'utf8')).toBe('{"keys": "nope"}')
  })
})
