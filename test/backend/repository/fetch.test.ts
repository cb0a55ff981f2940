import { execFile, spawn } from 'node:child_process'
import { cp, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  FETCH_MARKER, FetchRefused, createS3Client, directorySource, fetchModelsFromEnv, fetchRepository, s3Source, type ModelSource,
} from '../../../backend/repository/fetch.ts'
import { Repository } from '../../../backend/repository/repository.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const MODELS = join(ROOT, 'models')
const run = promisify(execFile)

/** s3rver ships no types; this is the part of its API the test uses. */
interface S3rverInstance {
  run(): Promise<AddressInfo>
  close(): Promise<void>
}
type S3rverClass = new (options: { address: string; port: number; directory: string; silent: boolean; configureBuckets: Array<{ name: string }> }) => S3rverInstance
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass

const BUCKET = 'models'
// s3rver's built-in key pair.
const KEYS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' }

let scratch: string
let s3: S3rverInstance
let endpoint: string
let client: S3Client

const filesUnder = async (dir: string): Promise<string[]> =>
  (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort()

/** A copy of the bundled repository, broken by `edit`. */
const brokenCopy = async (edit: (root: string) => Promise<void>): Promise<string> => {
  const root = await mkdtemp(join(scratch, 'broken-'))
  await cp(MODELS, root, { recursive: true })
  await edit(root)
  return root
}

const flipOneByte = async (file: string) => {
  const bytes = await readFile(file)
  bytes[bytes.length >> 1] ^= 0x01
  await writeFile(file, bytes)
}

const dropManifestLine = async (manifest: string, file: string) => {
  const lines = (await readFile(manifest, 'utf8')).split('\n').filter((l) => !l.endsWith(`  ${file}`))
  await writeFile(manifest, lines.join('\n'))
}

const upload = async (dir: string, prefix: string) => {
  for (const file of await filesUnder(dir)) {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}/${file}`, Body: await readFile(join(dir, file)) }))
  }
}

const envFor = (prefix: string, destination: string) => ({
  MODEL_SOURCE: `s3://${BUCKET}/${prefix}`, MODEL_REPOSITORY: destination, S3_ENDPOINT: endpoint, AWS_REGION: 'us-east-1', ...KEYS,
})

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'edge-infer-fetch-'))
  s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: join(scratch, 's3'), silent: true, configureBuckets: [{ name: BUCKET }] })
  const { port } = await s3.run()
  endpoint = `http://127.0.0.1:${port}`
  client = createS3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, idleTimeoutMs: 5_000, credentials: { accessKeyId: KEYS.AWS_ACCESS_KEY_ID, secretAccessKey: KEYS.AWS_SECRET_ACCESS_KEY } })
  await upload(MODELS, 'good')
  await upload(await brokenCopy((root) => flipOneByte(join(root, 'credit-risk/2/model.onnx'))), 'tampered')
  await upload(await brokenCopy((root) => dropManifestLine(join(root, 'credit-risk/1/MANIFEST'), 'baseline.json')), 'unlisted')
})

afterAll(async () => {
  client?.destroy()
  await s3?.close()
  if (scratch) await rm(scratch, { recursive: true, force: true })
})

describe('fetchRepository from S3 (s3rver on loopback, the real S3 client)', () => {
  it('copies the bundled repository byte for byte and every version verifies', async () => {
    const dest = join(scratch, 'from-s3')
    const result = await fetchModelsFromEnv(envFor('good', dest))
    expect(result.models).toEqual({ 'credit-risk': [1, 2] })
    const expected = await filesUnder(MODELS)
    expect(await filesUnder(dest)).toEqual([FETCH_MARKER, ...expected].sort())
    for (const file of expected) expect((await readFile(join(dest, file))).equals(await readFile(join(MODELS, file))), file).toBe(true)
    const model = await new Repository(dest).read('credit-risk')
    expect(model?.versions.map((v) => [v.version, v.verified])).toEqual([[1, true], [2, true]])
  })

  it('refuses a repository with one byte changed, naming model, version and file, and leaves the previous copy in place', async () => {
    const dest = join(scratch, 'kept')
    await fetchModelsFromEnv(envFor('good', dest))
    const before = await readFile(join(dest, 'credit-risk/2/model.onnx'))
    const refused = fetchModelsFromEnv(envFor('tampered', dest))
    await expect(refused).rejects.toBeInstanceOf(FetchRefused)
    await expect(refused).rejects.toThrow(/credit-risk version 2: model\.onnx sha256 [0-9a-f]{64} does not match MANIFEST/)
    expect((await readFile(join(dest, 'credit-risk/2/model.onnx'))).equals(before)).toBe(true)
    expect((await readdir(dest)).filter((e) => e.startsWith('.incoming-'))).toEqual([])
  })

  it('refuses a file that its MANIFEST does not list', async () => {
    await expect(fetchModelsFromEnv(envFor('unlisted', join(scratch, 'unlisted')))).rejects.toThrow(/credit-risk version 1: files not in MANIFEST: baseline\.json/)
  })

  it('refuses an empty prefix instead of starting with no models', async () => {
    await expect(fetchModelsFromEnv(envFor('nothing-here', join(scratch, 'empty')))).rejects.toThrow(/no model/)
  })

  it('the entry exits 1 with the refusal on stderr, and 0 after a good fetch', async () => {
    const entry = ['--import', 'tsx', 'backend/fetch-models.ts']
    const env = (prefix: string) => ({ ...process.env, ...envFor(prefix, join(scratch, `entry-${prefix}`)) })
    const bad = await run(process.execPath, entry, { cwd: ROOT, env: env('tampered') }).then(() => undefined, (err: { code: number; stderr: string }) => err)
    expect(bad?.code).toBe(1)
    expect(bad?.stderr).toMatch(/model fetch refused: .*\n.*credit-risk version 2: model\.onnx/)
    const good = await run(process.execPath, entry, { cwd: ROOT, env: env('good') })
    expect(JSON.parse(good.stdout)).toMatchObject({ msg: 'model repository fetched and verified', models: { 'credit-risk': [1, 2] } })
  })
})

describe('fetchRepository from a directory', () => {
  it('copies and verifies the bundled repository', async () => {
    const dest = join(scratch, 'from-dir')
    const result = await fetchRepository(directorySource(MODELS), dest, { timeoutMs: 10_000 })
    expect(result).toMatchObject({ models: { 'credit-risk': [1, 2] }, files: (await filesUnder(MODELS)).length })
    expect((await readFile(join(dest, 'credit-risk/1/model.onnx'))).equals(await readFile(join(MODELS, 'credit-risk/1/model.onnx')))).toBe(true)
  })

  it('refuses a tampered copy and a missing listed file, naming each', async () => {
    const tampered = await brokenCopy((root) => flipOneByte(join(root, 'credit-risk/1/baseline.json')))
    await expect(fetchRepository(directorySource(tampered), join(scratch, 'dir-tampered'), { timeoutMs: 10_000 }))
      .rejects.toThrow(/credit-risk version 1: baseline\.json sha256 [0-9a-f]{64} does not match/)
    const missing = await brokenCopy((root) => rm(join(root, 'credit-risk/2/metrics.json')))
    await expect(fetchRepository(directorySource(missing), join(scratch, 'dir-missing'), { timeoutMs: 10_000 }))
      .rejects.toThrow(/credit-risk version 2: metrics\.json is listed in MANIFEST but missing/)
  })

  it('will not replace a directory it did not fill', async () => {
    const foreign = await brokenCopy(async () => {})
    await expect(fetchRepository(directorySource(MODELS), foreign, { timeoutMs: 10_000 })).rejects.toThrow(/is not empty and was not filled by a model fetch/)
    expect(await readdir(foreign)).toEqual(['credit-risk'])
  })

  it('logs the bytes of every file copied, however the parallel copies interleave', async () => {
    const files = await filesUnder(MODELS)
    let total = 0
    for (const file of files) total += (await stat(join(MODELS, file))).size
    const result = await fetchRepository(directorySource(MODELS), join(scratch, 'bytes'), { timeoutMs: 10_000, concurrency: files.length })
    expect(result.bytes).toBe(total)
  })

  it('two good fetches in a row into the same destination: the second replaces the first', async () => {
    const dest = join(scratch, 'twice')
    await fetchRepository(directorySource(MODELS), dest, { timeoutMs: 10_000 })
    await writeFile(join(dest, 'credit-risk/2/model.onnx'), 'left over from the first fetch')
    await fetchRepository(directorySource(MODELS), dest, { timeoutMs: 10_000 })
    expect(await filesUnder(dest)).toEqual([FETCH_MARKER, ...(await filesUnder(MODELS))].sort())
    expect((await readFile(join(dest, 'credit-risk/2/model.onnx'))).equals(await readFile(join(MODELS, 'credit-risk/2/model.onnx')))).toBe(true)
    expect(JSON.parse(await readFile(join(dest, FETCH_MARKER), 'utf8'))).toMatchObject({ state: 'fetched', models: { 'credit-risk': [1, 2] } })
  })

  it('a fetch killed (SIGKILL) mid-copy into an empty volume leaves it to the next fetch', async () => {
    const dest = join(scratch, 'killed-copy')
    // A fetch in a process of its own whose source writes part of a file and then stalls; it says when.
    const script = `
      import { writeFile } from 'node:fs/promises'
      import { fetchRepository } from ${JSON.stringify(join(ROOT, 'backend/repository/fetch.ts'))}
      const stalled = {
        description: 'stalled',
        list: async () => ['credit-risk/config.json', 'credit-risk/1/model.onnx'],
        copy: async (path, destination) => {
          await writeFile(destination, 'part of ' + path)
          if (path.endsWith('model.onnx')) {
            process.stdout.write('copying\\n')
            await new Promise(() => setInterval(() => {}, 60_000))
          }
        },
      }
      await fetchRepository(stalled, ${JSON.stringify(dest)}, { timeoutMs: 600_000, concurrency: 1 })
    `
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('copying') && resolve())
        child.once('exit', (code) => reject(new Error(`the stalled fetch exited (${code}) before it was killed`)))
      })
    } finally {
      child.kill('SIGKILL')
      await exited
    }
    expect((await readdir(dest)).filter((e) => e.startsWith('.incoming-'))).toHaveLength(1)
    await fetchRepository(directorySource(MODELS), dest, { timeoutMs: 10_000 })
    expect(await filesUnder(dest)).toEqual([FETCH_MARKER, ...(await filesUnder(MODELS))].sort())
  })

  it('a fetch killed mid-swap (marker in place, old and new contents mixed, staging left) leaves it to the next fetch', async () => {
    const dest = join(scratch, 'killed-swap')
    await fetchRepository(directorySource(MODELS), dest, { timeoutMs: 10_000 })
    await rm(join(dest, 'credit-risk/1'), { recursive: true })
    await mkdir(join(dest, '.incoming-dead/repository/credit-risk/2'), { recursive: true })
    await writeFile(join(dest, '.incoming-dead/repository/credit-risk/2/model.onnx'), 'half')
    await writeFile(join(dest, FETCH_MARKER), JSON.stringify({ state: 'replacing' }))
    await fetchRepository(directorySource(MODELS), dest, { timeoutMs: 10_000 })
    expect(await filesUnder(dest)).toEqual([FETCH_MARKER, ...(await filesUnder(MODELS))].sort())
  })

  it('refuses a source that brings the names the fetch keeps for itself', async () => {
    const sneaky: ModelSource = { description: 'sneaky', list: async () => ['credit-risk/config.json', FETCH_MARKER, '.incoming-x/a'], copy: async () => {} }
    await expect(fetchRepository(sneaky, join(scratch, 'sneaky'), { timeoutMs: 10_000 })).rejects.toThrow(`refusing paths whose names the fetch keeps for itself: ${FETCH_MARKER}, .incoming-x/a`)
  })

  it('refuses listed paths that would land outside the destination', async () => {
    const evil: ModelSource = { description: 'evil', list: async () => ['credit-risk/config.json', '../escape'], copy: async () => {} }
    await expect(fetchRepository(evil, join(scratch, 'evil'), { timeoutMs: 10_000 })).rejects.toThrow(/not plain relative paths: \.\.\/escape/)
  })
})

describe('every wait is bounded', () => {
  let silent: Server
  const sockets = new Set<Socket>()
  let silentEndpoint: string

  beforeAll(async () => {
    // Accepts connections and never answers a byte.
    silent = createServer((socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    silentEndpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => silent.close(() => resolve()))
  })

  const silentSource = (idleTimeoutMs: number) =>
    s3Source({ bucket: BUCKET, prefix: 'good', client: createS3Client({ endpoint: silentEndpoint, region: 'us-east-1', forcePathStyle: true, idleTimeoutMs, maxAttempts: 1, credentials: { accessKeyId: 'x', secretAccessKey: 'y' } }) })

  // Which bound ended each wait is read from the refusal, not from a clock: the other bound is
  // far beyond the test's own timeout, so a missing bound fails the test however loaded the machine.
  it('an endpoint that never answers fails on the idle timeout', async () => {
    const source = silentSource(300)
    const refused = fetchRepository(source, join(scratch, 'silent-idle'), { timeoutMs: 10 * 60_000 })
    await expect(refused).rejects.toThrow(/^listing s3:\/\/models\/good\/: /)
    await expect(refused).rejects.not.toThrow(/gave up after/)
    source.close?.()
  })

  it('the whole fetch gives up at its deadline even when no single wait is idle-bounded', async () => {
    const source = silentSource(10 * 60_000)
    await expect(fetchRepository(source, join(scratch, 'silent-deadline'), { timeoutMs: 500 })).rejects.toThrow(/gave up after 500 ms/)
    source.close?.()
  })
})

describe('createS3Client', () => {
  it('follows a bucket\'s region redirect (a bucket outside AWS_REGION is a 301 otherwise)', () => {
    const c = createS3Client({ region: 'us-east-1', forcePathStyle: false, idleTimeoutMs: 1_000 })
    try {
      expect(c.config.followRegionRedirects).toBe(true)
    } finally {
      c.destroy()
    }
  })
})
