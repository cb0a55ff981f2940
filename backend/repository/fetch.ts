import { randomUUID } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { copyFile, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, isAbsolute, join, posix, relative, resolve, sep } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'
import { z } from 'zod'
import { Repository } from './repository.ts'
import { settingsSchema } from '../settings.ts'

/** Where a model repository is copied from: every file under it, by path relative to its root. */
export interface ModelSource {
  /** For messages: the directory or `s3://bucket/prefix`. */
  readonly description: string
  /** Every file's path relative to the root, `/`-separated. */
  list(signal: AbortSignal): Promise<string[]>
  /** Writes the file at `path` (as listed) to `destination`. */
  copy(path: string, destination: string, signal: AbortSignal): Promise<void>
  /** Releases connections, so the process can exit once the fetch is done. */
  close?(): void
}

/** A model repository already on disk (a local run, or a volume another step filled). */
export const directorySource = (root: string): ModelSource => {
  const base = resolve(root)
  return {
    description: base,
    async list() {
      const entries = await readdir(base, { recursive: true, withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
        throw new Error(`model source ${base} cannot be read: ${err.code ?? err.message}`)
      })
      return entries.filter((e) => e.isFile()).map((e) => relative(base, join(e.parentPath, e.name)).split(sep).join('/'))
    },
    async copy(path, destination) {
      await copyFile(join(base, path), destination)
    },
  }
}

export interface S3SourceOptions {
  bucket: string
  /** Key prefix of the repository's root; '' for the whole bucket. */
  prefix: string
  client: S3Client
}

/** Objects under `s3://bucket/prefix/`; any S3-compatible store (S3, R2, MinIO) behind the client. */
export const s3Source = ({ bucket, prefix, client }: S3SourceOptions): ModelSource => {
  const root = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`
  return {
    description: `s3://${bucket}/${root}`,
    async list(signal) {
      const keys: string[] = []
      let token: string | undefined
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: root, ContinuationToken: token }), { abortSignal: signal })
        for (const object of page.Contents ?? []) {
          // Keys ending in '/' are console-made "folders", not files.
          if (object.Key && !object.Key.endsWith('/')) keys.push(object.Key.slice(root.length))
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined
      } while (token)
      return keys
    },
    async copy(path, destination, signal) {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: root + path }), { abortSignal: signal })
      if (!(object.Body instanceof Readable)) throw new Error(`s3://${bucket}/${root}${path}: no body in the response`)
      // The signal also bounds the body: a stream that stalls after the headers is cut off.
      await pipeline(object.Body, createWriteStream(destination), { signal })
    },
    close: () => client.destroy(),
  }
}

export interface S3ClientOptions {
  /** S3-compatible endpoint (R2, MinIO); unset means AWS S3 itself. */
  endpoint?: string
  region: string
  /** Bucket in the path, not the host name: what R2 and MinIO-style endpoints want. */
  forcePathStyle: boolean
  /** Longest wait to connect, and longest a socket may sit idle mid-request. */
  idleTimeoutMs: number
  maxAttempts?: number
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }
}

/** Without `credentials`, the SDK's standard chain: AWS_* variables, web identity (IRSA), the Lambda role. */
export const createS3Client = (o: S3ClientOptions): S3Client =>
  new S3Client({
    region: o.region,
    // A bucket in another region than AWS_REGION answers 301: retried there instead of failing the init step.
    followRegionRedirects: true,
    forcePathStyle: o.forcePathStyle,
    ...(o.endpoint ? { endpoint: o.endpoint } : {}),
    ...(o.maxAttempts ? { maxAttempts: o.maxAttempts } : {}),
    ...(o.credentials ? { credentials: o.credentials } : {}),
    requestHandler: { connectionTimeout: o.idleTimeoutMs, socketTimeout: o.idleTimeoutMs },
  })

/** A listed path that would land outside the destination, or is no plain relative path. */
const unsafePath = (path: string): boolean =>
  path === '' || isAbsolute(path) || path.includes('\\') || path.split('/').some((part) => part === '' || part === '.' || part === '..')

/**
 * Kept in the destination from before the first entry is replaced until the next fetch, so a later
 * fetch knows the contents are its own to replace, even after one was killed midway.
 */
export const FETCH_MARKER = '.model-fetch.json'
/** A fetch's own staging folder, inside the destination: renames from it stay on the volume. */
const STAGING_PREFIX = '.incoming-'

export class FetchRefused extends Error {
  override name = 'FetchRefused'
}

export interface FetchResult {
  source: string
  destination: string
  files: number
  bytes: number
  /** `name: [versions]` of every model copied, each version verified against its MANIFEST. */
  models: Record<string, number[]>
}

export interface FetchOptions {
  /** Bound on the whole copy: listing, every download, verification. */
  timeoutMs: number
  /** Downloads in flight at once. */
  concurrency?: number
}

/** Refusals naming the model, the version and the file (verifyVersion's reason names the file). */
const verifyStaged = async (root: string): Promise<{ problems: string[]; models: Record<string, number[]> }> => {
  const repository = new Repository(root)
  const names = await repository.names()
  const problems: string[] = []
  const models: Record<string, number[]> = {}
  if (names.length === 0) problems.push('no model (no <model>/config.json) in the source')
  for (const name of names) {
    const model = await repository.read(name)
    if (!model) {
      problems.push(`${name}: not a valid model name (lowercase letters, digits, '.', '_', '-')`)
      continue
    }
    if (model.error !== undefined) problems.push(`${name}: ${model.error}`)
    if (model.versions.length === 0) problems.push(`${name}: no version folder`)
    for (const v of model.versions) if (!v.verified) problems.push(`${name} version ${v.version}: ${v.reason}`)
    models[name] = model.versions.map((v) => v.version)
  }
  return { problems, models }
}

/** The fetch's own names in the destination, which a source may not bring. */
const ownName = (entry: string): boolean => entry === FETCH_MARKER || entry.startsWith(STAGING_PREFIX)

/** What a fetch may replace: nothing there but a killed fetch's staging, or a fetch's contents (its marker). */
const isEmptyOrOurs = async (dir: string): Promise<boolean> => {
  const entries = (await readdir(dir)).filter((e) => !e.startsWith(STAGING_PREFIX))
  return entries.length === 0 || entries.includes(FETCH_MARKER)
}

/** Replaces the marker in one rename, so a kill leaves either the old one or the new one. */
const writeMarker = async (dest: string, staging: string, contents: object): Promise<void> => {
  const written = join(staging, FETCH_MARKER)
  await writeFile(written, `${JSON.stringify(contents)}\n`)
  await rename(written, join(dest, FETCH_MARKER))
}

/**
 * Runs `work` over `items`, at most `limit` at a time. The first failure stops further starts and
 * is thrown once every lane has stopped, so nothing still writes when the caller cleans up.
 */
const inPool = async <T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> => {
  let next = 0
  let failure: { error: unknown } | undefined
  const lane = async () => {
    while (!failure && next < items.length) {
      const item = items[next++]!
      await work(item).catch((error: unknown) => {
        failure ??= { error }
      })
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
  if (failure) throw failure.error
}

/**
 * Copies a model repository into `destination` and verifies every version of every model against
 * its MANIFEST before anything is put in place: the copy goes to a staging folder inside the
 * destination (the destination is a volume; its parent may be a read-only root), and only a fully
 * verified copy replaces what was there. Throws FetchRefused naming each model, version and file
 * that does not check. A fetch killed at any step leaves the destination to the next fetch: its
 * staging folders are recognised and removed, and the marker stays in place through the swap.
 */
export const fetchRepository = async (source: ModelSource, destination: string, options: FetchOptions): Promise<FetchResult> => {
  const dest = resolve(destination)
  const signal = AbortSignal.timeout(options.timeoutMs)
  await mkdir(dest, { recursive: true })
  // Never delete what someone else put there (a developer's ./models, a wrong mount).
  if (!(await isEmptyOrOurs(dest))) throw new FetchRefused(`${dest} is not empty and was not filled by a model fetch (no ${FETCH_MARKER}); refusing to replace it`)
  // A killed fetch's staging: nobody else writes these names, and no other fetch runs on the volume at once.
  for (const entry of await readdir(dest)) if (entry.startsWith(STAGING_PREFIX)) await rm(join(dest, entry), { recursive: true, force: true })
  // The copy goes to staging/repository, so the marker written beside it cannot collide with a copied entry.
  const staging = join(dest, `${STAGING_PREFIX}${randomUUID()}`)
  const incoming = join(staging, 'repository')
  await mkdir(incoming, { recursive: true })
  try {
    const bounded = async <T>(what: string, step: Promise<T>): Promise<T> => {
      try {
        return await step
      } catch (err) {
        if (signal.aborted) throw new FetchRefused(`${what}: gave up after ${options.timeoutMs} ms (MODEL_FETCH_TIMEOUT_MS)`)
        throw new FetchRefused(`${what}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
    const files = await bounded(`listing ${source.description}`, source.list(signal))
    const unsafe = files.filter(unsafePath)
    if (unsafe.length > 0) throw new FetchRefused(`${source.description}: refusing paths that are not plain relative paths: ${unsafe.join(', ')}`)
    const reserved = files.filter((file) => ownName(file.split('/')[0]))
    if (reserved.length > 0) throw new FetchRefused(`${source.description}: refusing paths whose names the fetch keeps for itself: ${reserved.join(', ')}`)
    let bytes = 0
    await inPool(files, options.concurrency ?? 8, async (file) => {
      const target = join(incoming, ...file.split('/'))
      await mkdir(dirname(target), { recursive: true })
      await bounded(`copying ${posix.join(source.description, file)}`, source.copy(file, target, signal))
      const { size } = await stat(target)
      bytes += size
    })
    const { problems, models } = await verifyStaged(incoming)
    if (problems.length > 0) throw new FetchRefused(`model repository from ${source.description} does not verify; nothing was replaced:\n  ${problems.join('\n  ')}`)
    // Verified: swap the contents in. The marker goes first and stays, so a kill mid-swap leaves
    // contents the next fetch may replace; renames stay on the volume, so each is atomic.
    const result: FetchResult = { source: source.description, destination: dest, files: files.length, bytes, models }
    await writeMarker(dest, staging, { state: 'replacing', source: source.description, started_at: new Date().toISOString() })
    for (const entry of await readdir(dest)) {
      if (!ownName(entry)) await rm(join(dest, entry), { recursive: true, force: true })
    }
    for (const entry of await readdir(incoming)) await rename(join(incoming, entry), join(dest, entry))
    await writeMarker(dest, staging, { state: 'fetched', ...result, fetched_at: new Date().toISOString() })
    return result
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
}

const positiveInt = (fallback: number) => z.coerce.number().int().min(1).default(fallback)
const flag = z.enum(['true', 'false']).transform((v) => v === 'true')

/** What the fetch step reads from its environment (the init container's, or Lambda's). */
export const fetchSettingsSchema = z.object({
  /** A directory, or `s3://bucket/prefix`. */
  MODEL_SOURCE: z.string({ error: 'required: a directory or s3://bucket/prefix' }),
  /** The same variable, and default, the server reads its repository from. */
  MODEL_REPOSITORY: settingsSchema.shape.MODEL_REPOSITORY,
  S3_ENDPOINT: z.url().optional(),
  AWS_REGION: z.string().min(1).optional(),
  /** Static keys when both are set; otherwise the SDK's chain (web identity, the Lambda role, ...). */
  AWS_ACCESS_KEY_ID: z.string().min(1).optional(),
  AWS_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  AWS_SESSION_TOKEN: z.string().min(1).optional(),
  /** Defaults to true with S3_ENDPOINT (R2, MinIO), false for AWS S3. */
  S3_FORCE_PATH_STYLE: flag.optional(),
  MODEL_FETCH_TIMEOUT_MS: positiveInt(10 * 60_000),
  MODEL_FETCH_IDLE_TIMEOUT_MS: positiveInt(30_000),
})

export type FetchSettings = z.infer<typeof fetchSettingsSchema>

export const readFetchSettings = (env: NodeJS.ProcessEnv = process.env): FetchSettings => {
  const parsed = fetchSettingsSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')))
  if (!parsed.success) throw new FetchRefused(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
  return parsed.data
}

/** `s3://bucket/prefix` → the S3 source; anything else is a directory path. */
export const sourceFromSettings = (s: FetchSettings): ModelSource => {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/.exec(s.MODEL_SOURCE)
  if (!match) return directorySource(s.MODEL_SOURCE)
  const client = createS3Client({
    endpoint: s.S3_ENDPOINT,
    // The SDK refuses to sign without a region; R2 takes "auto", MinIO anything.
    region: s.AWS_REGION ?? 'us-east-1',
    forcePathStyle: s.S3_FORCE_PATH_STYLE ?? s.S3_ENDPOINT !== undefined,
    idleTimeoutMs: s.MODEL_FETCH_IDLE_TIMEOUT_MS,
    // From the env given, not only process.env, so Lambda's init and tests can pass their own.
    ...(s.AWS_ACCESS_KEY_ID && s.AWS_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: s.AWS_ACCESS_KEY_ID, secretAccessKey: s.AWS_SECRET_ACCESS_KEY, ...(s.AWS_SESSION_TOKEN ? { sessionToken: s.AWS_SESSION_TOKEN } : {}) } }
      : {}),
  })
  return s3Source({ bucket: match[1]!, prefix: match[2]!, client })
}

/** The init step as the entry and Lambda's init run it: settings from the environment, fetch, verify. */
export const fetchModelsFromEnv = async (env: NodeJS.ProcessEnv = process.env): Promise<FetchResult> => {
  const settings = readFetchSettings(env)
  const source = sourceFromSettings(settings)
  try {
    return await fetchRepository(source, settings.MODEL_REPOSITORY, { timeoutMs: settings.MODEL_FETCH_TIMEOUT_MS })
  } finally {
    source.close?.()
  }
}
