import { createHash } from 'node:crypto'

/** Name of the checksum file in every version folder. */
export const MANIFEST_FILE = 'MANIFEST'

/**
 * The MANIFEST text for a version folder's files, in `sha256sum` format so `sha256sum -c MANIFEST`
 * checks a folder by hand: `<64 hex>  <file name>` per line, sorted by name (code-unit order, not
 * locale order, so every machine sorts alike), trailing newline.
 */
export const formatManifest = (files: Readonly<Record<string, Uint8Array>>): string =>
  Object.keys(files)
    .toSorted((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((name) => `${createHash('sha256').update(files[name]).digest('hex')}  ${name}\n`)
    .join('')
