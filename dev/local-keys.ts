import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import { type KeyEntry, generateApiKey, hashApiKey, keyEntrySchema } from '../edge/stores/keys/api-key.ts'

/**
 * The local stack's API keys, kept across restarts in a git-ignored file (mode 0600) so the key
 * `npm start` prints stays the same and a key made with `keys:create --local` is not wiped. Local
 * development only: the file holds the keys themselves, which no deployed environment ever does.
 */
/** `.dev.keys.json` at the repository root; `EDGE_INFER_LOCAL_KEYS` names another (tests). */
export const LOCAL_KEYS_FILE = process.env.EDGE_INFER_LOCAL_KEYS || fileURLToPath(new URL('../.dev.keys.json', import.meta.url))

/** The key `npm start` prints and the console is opened with. */
export const LOCAL_DEV_KEY = 'local-dev'

const localKeysSchema = z.object({ keys: z.array(z.object({ key: z.string().min(1), entry: keyEntrySchema })) })
export type LocalKeys = z.infer<typeof localKeysSchema>

/** The file's keys; none when it does not exist. A file that does not parse is an error naming it. */
export const readLocalKeys = (file = LOCAL_KEYS_FILE): LocalKeys => {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { keys: [] }
    throw error
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  const parsed = localKeysSchema.safeParse(json)
  if (!parsed.success) throw new Error(`${file} is not a local keys file (${parsed.error.issues[0]?.message ?? 'not JSON'}); move it away, or start with --fresh-key`)
  return parsed.data
}

/** Replaces the file whole (written beside it, then renamed), readable by its owner only. */
export const writeLocalKeys = (keys: LocalKeys, file = LOCAL_KEYS_FILE): void => {
  const draft = `${file}.${process.pid}.tmp`
  writeFileSync(draft, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 })
  renameSync(draft, file)
}

/** Adds a key; a name the file already holds is refused (keys are counted and limited by name). */
export const addLocalKey = (key: string, entry: KeyEntry, file = LOCAL_KEYS_FILE): void => {
  const current = readLocalKeys(file)
  if (current.keys.some((k) => k.entry.name === entry.name)) throw new Error(`${file} already holds a key named "${entry.name}"`)
  writeLocalKeys({ keys: [...current.keys, { key, entry }] }, file)
}

/**
 * The local dev key: the one kept in the file, or a new one (kept from then on) when there is none
 * or `fresh` asks for it. Answers it with every entry the edge is to accept.
 */
export const localDevKey = async ({ fresh = false, file = LOCAL_KEYS_FILE } = {}): Promise<{ key: string; entries: KeyEntry[] }> => {
  const current = readLocalKeys(file)
  let held = current.keys
  let kept = held.find((k) => k.entry.name === LOCAL_DEV_KEY)
  if (kept === undefined || fresh) {
    const key = generateApiKey('local')
    kept = { key, entry: { name: LOCAL_DEV_KEY, hash: await hashApiKey(key), scopes: ['predict', 'admin', 'feedback'], rate_limit_per_minute: 6_000 } }
    const keys = { keys: [...current.keys.filter((k) => k.entry.name !== LOCAL_DEV_KEY), kept] }
    held = keys.keys
    if (current.keys.length > 0 || fresh) writeLocalKeys(keys, file)
    else {
      // The first key: created only if no other start made the file meanwhile, then everyone uses that one.
      try {
        writeFileSync(file, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600, flag: 'wx' })
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        return localDevKey({ file })
      }
    }
  }
  return { key: kept.key, entries: held.map((k) => k.entry) }
}
