import { readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { MANIFEST_FILE, formatManifest } from '../training/manifest.ts'

/**
 * Rewrites a version folder's MANIFEST from the regular files in it, never listing MANIFEST itself
 * (`sha256sum * > MANIFEST` does, and the backend then reads a hash of the empty file it truncated).
 * Returns the files listed.
 */
export const rewriteManifest = async (versionDir: string): Promise<string[]> => {
  const entries = await readdir(versionDir, { withFileTypes: true })
  const names = entries.filter((e) => e.isFile() && e.name !== MANIFEST_FILE).map((e) => e.name)
  if (names.length === 0) throw new Error(`${versionDir} holds no files to list`)
  const files = Object.fromEntries(await Promise.all(names.map(async (name) => [name, await readFile(join(versionDir, name))] as const)))
  await writeFile(join(versionDir, MANIFEST_FILE), formatManifest(files))
  return Object.keys(files).toSorted()
}
