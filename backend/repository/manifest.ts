import { createHash } from 'node:crypto'
import { constants, type BigIntStats } from 'node:fs'
import { open, readdir, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'

export const MANIFEST_FILE = 'MANIFEST'

/** A MANIFEST is a line per file; anything larger is not one. */
const MANIFEST_MAX_BYTES = 1024 * 1024
/** Bytes hashed per read: memory stays flat whatever the file's size. */
const HASH_CHUNK_BYTES = 1024 * 1024

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex')

/** A name that stays inside the folder it is joined to: no separator, no `.` or `..`. */
const isPlainName = (name: string): boolean => name !== '.' && name !== '..' && !/[/\\\0]/.test(name)

/** Parses `sha256sum` output: `<64 hex>  <file name>` per line; every name must be a plain file name. */
export const parseManifest = (text: string): Map<string, string> => {
  const sums = new Map<string, string>()
  for (const [n, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue
    const match = /^([0-9a-f]{64}) [ *](.+)$/.exec(line)
    if (!match) throw new Error(`MANIFEST line ${n + 1} is not "<sha256>  <file>"`)
    if (!isPlainName(match[2])) throw new Error(`MANIFEST line ${n + 1} names ${JSON.stringify(match[2])}, which is not a file of the version folder`)
    sums.set(match[2], match[1])
  }
  return sums
}

/** What a file's hash is valid for: the same inode, size and times (ctime moves on every write). */
const stampOf = (s: BigIntStats): string => `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`

/**
 * sha256 of files already read, by path, valid while the file's stamp is unchanged: listing the
 * repository again reads no model bytes unless a file changed.
 */
export class HashCache {
  private readonly known = new Map<string, { stamp: string; sha256: string }>()

  get(path: string, stamp: string): string | undefined {
    const entry = this.known.get(path)
    return entry?.stamp === stamp ? entry.sha256 : undefined
  }

  set(path: string, stamp: string, sha256: string): void {
    this.known.set(path, { stamp, sha256 })
  }
}

class NotRegular extends Error {}

/**
 * Opens a regular file without following a symlink and without blocking on a FIFO; throws
 * NotRegular for anything else, and the open's own error (ENOENT) when it is missing.
 */
const openRegular = async (path: string): Promise<{ handle: FileHandle; stat: BigIntStats }> => {
  let handle: FileHandle
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new NotRegular()
    throw err
  }
  const stat = await handle.stat({ bigint: true })
  if (!stat.isFile()) {
    await handle.close()
    throw new NotRegular()
  }
  return { handle, stat }
}

/** Hashes at most `size` bytes (what stat gave when the file was opened), a chunk at a time. */
const hashHandle = async (handle: FileHandle, size: number): Promise<string> => {
  const hash = createHash('sha256')
  const chunk = Buffer.allocUnsafe(Math.min(HASH_CHUNK_BYTES, Math.max(size, 1)))
  for (let at = 0; at < size; ) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, size - at), at)
    if (bytesRead === 0) break
    hash.update(chunk.subarray(0, bytesRead))
    at += bytesRead
  }
  return hash.digest('hex')
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

const refused = (reason: string, digest = '', sums: ReadonlyMap<string, string> = new Map()): ManifestCheck => ({ ok: false, reason, digest, sums })

/**
 * Checks every file of a version folder against its MANIFEST: each listed file must be a regular
 * file directly in the folder and match, and every entry present must be listed (an unlisted file
 * could be an unverified model). Files are hashed as streams, and not at all when `cache` knows them.
 */
export const verifyVersion = async (dir: string, cache: HashCache = new HashCache()): Promise<ManifestCheck> => {
  let manifestBytes: Buffer
  try {
    const { handle, stat } = await openRegular(join(dir, MANIFEST_FILE))
    try {
      if (stat.size > MANIFEST_MAX_BYTES) return refused(`MANIFEST is larger than ${MANIFEST_MAX_BYTES} bytes`)
      const buffer = Buffer.alloc(Number(stat.size))
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
      manifestBytes = buffer.subarray(0, bytesRead)
    } finally {
      await handle.close()
    }
  } catch (err) {
    return refused(err instanceof NotRegular ? 'MANIFEST is not a regular file' : 'MANIFEST is missing')
  }
  const digest = sha256(manifestBytes)
  let sums: Map<string, string>
  try {
    sums = parseManifest(manifestBytes.toString('utf8'))
  } catch (err) {
    return refused((err as Error).message, digest)
  }
  const present = (await readdir(dir, { withFileTypes: true })).filter((e) => !e.isDirectory()).map((e) => e.name)
  const unlisted = present.filter((f) => f !== MANIFEST_FILE && !sums.has(f))
  if (unlisted.length > 0) return refused(`files not in MANIFEST: ${unlisted.join(', ')}`, digest, sums)
  for (const [file, expected] of sums) {
    const path = join(dir, file)
    let actual: string
    try {
      const { handle, stat } = await openRegular(path)
      try {
        const stamp = stampOf(stat)
        const known = cache.get(path, stamp)
        actual = known ?? (await hashHandle(handle, Number(stat.size)))
        if (known === undefined) cache.set(path, stamp, actual)
      } finally {
        await handle.close()
      }
    } catch (err) {
      if (err instanceof NotRegular) return refused(`${file} is listed in MANIFEST but is not a regular file`, digest, sums)
      return refused(`${file} is listed in MANIFEST but missing`, digest, sums)
    }
    if (actual !== expected) return refused(`${file} sha256 ${actual} does not match MANIFEST ${expected}`, digest, sums)
  }
  return { ok: true, reason: '', digest, sums }
}
