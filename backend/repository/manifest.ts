import { createHash } from 'node:crypto'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'

export const MANIFEST_FILE = 'MANIFEST'

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex')

/** Parses `sha256sum` output: `<64 hex>  <file name>` per line. */
export const parseManifest = (text: string): Map<string, string> => {
  const sums = new Map<string, string>()
  for (const [n, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue
    const match = /^([0-9a-f]{64}) [ *](.+)$/.exec(line)
    if (!match) throw new Error(`MANIFEST line ${n + 1} is not "<sha256>  <file>"`)
    sums.set(match[2], match[1])
  }
  return sums
}

export interface ManifestCheck {
  ok: boolean
  /** Why the version may not load; empty when ok. */
  reason: string
  /** sha256 of the manifest itself: a version's identity for reload decisions. */
  digest: string
  /** sha256 of each listed file, as the MANIFEST states it. */
  sums: ReadonlyMap<string, string>
}

/**
 * Checks every file of a version folder against its MANIFEST: each listed file must exist and
 * match, and every file present must be listed (an unlisted file could be an unverified model).
 */
export const verifyVersion = async (dir: string): Promise<ManifestCheck> => {
  let manifestBytes: Buffer
  try {
    manifestBytes = await readFile(join(dir, MANIFEST_FILE))
  } catch {
    return { ok: false, reason: 'MANIFEST is missing', digest: '', sums: new Map() }
  }
  const digest = sha256(manifestBytes)
  let sums: Map<string, string>
  try {
    sums = parseManifest(manifestBytes.toString('utf8'))
  } catch (err) {
    return { ok: false, reason: (err as Error).message, digest, sums: new Map() }
  }
  const present = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name)
  const unlisted = present.filter((f) => f !== MANIFEST_FILE && !sums.has(f))
  if (unlisted.length > 0) return { ok: false, reason: `files not in MANIFEST: ${unlisted.join(', ')}`, digest, sums }
  for (const [file, expected] of sums) {
    let actual: string
    try {
      actual = sha256(await readFile(join(dir, file)))
    } catch {
      return { ok: false, reason: `${file} is listed in MANIFEST but missing`, digest, sums }
    }
    if (actual !== expected) return { ok: false, reason: `${file} sha256 ${actual} does not match MANIFEST ${expected}`, digest, sums }
  }
  return { ok: true, reason: '', digest, sums }
}
