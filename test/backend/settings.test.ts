import { describe, expect, it } from 'vitest'
import { readSettings } from '../../backend/settings.ts'
import { startBackend } from './support/backend-process.ts'
import { DEMO_REPOSITORY } from './support/fixture-repository.ts'

const TOKEN = 'the-same-token-0123456789'

describe('settings', () => {
  it('refuse an ADMIN_TOKEN equal to INFER_TOKEN, and the server does not start with them', async () => {
    expect(() => readSettings({ ADMIN_TOKEN: TOKEN, INFER_TOKEN: TOKEN })).toThrow(/ADMIN_TOKEN: ADMIN_TOKEN must differ from INFER_TOKEN/)
    expect(readSettings({ ADMIN_TOKEN: `${TOKEN}-admin`, INFER_TOKEN: TOKEN })).toMatchObject({ ADMIN_TOKEN: `${TOKEN}-admin`, INFER_TOKEN: TOKEN })
    await expect(startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY, ADMIN_TOKEN: TOKEN, INFER_TOKEN: TOKEN })).rejects.toThrow(/exited with 1 before listening: invalid configuration: ADMIN_TOKEN: ADMIN_TOKEN must differ from INFER_TOKEN/)
  })

  it('refuse a drain window that does not fit in the grace period', () => {
    expect(() => readSettings({ SHUTDOWN_DRAIN_MS: '25000' })).toThrow(/SHUTDOWN_DRAIN_MS: SHUTDOWN_DRAIN_MS must be less than SHUTDOWN_GRACE_MS/)
    expect(readSettings({ SHUTDOWN_DRAIN_MS: '20000', SHUTDOWN_GRACE_MS: '30000' })).toMatchObject({ SHUTDOWN_DRAIN_MS: 20_000 })
    expect(readSettings({})).toMatchObject({ SHUTDOWN_DRAIN_MS: 5_000, SHUTDOWN_GRACE_MS: 25_000, LINGER_MS: 5_000, LINGER_MAX_BYTES: 64 * 1024 * 1024 })
  })
})
