import { createHash } from 'node:crypto'
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { MANIFEST_ACCEPT, parseChallenge, pin, resolveManifest } from '../../../tools/images/pin.ts'
import { PINNED_DOCKERFILES, parseBases, parseImageRef, rewriteArg } from '../../../tools/images/pins.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const INDEX = 'application/vnd.oci.image.index.v1+json'
const sha = (body: string) => `sha256:${createHash('sha256').update(body).digest('hex')}`

/**
 * A registry speaking the HTTP API v2 manifest protocol on 127.0.0.1: anonymous Bearer tokens from
 * its own token endpoint (as auth.docker.io and public.ecr.aws/token serve them), manifests by tag
 * or digest, Docker-Content-Digest on HEAD. Each registry host is a path prefix, so the test sees
 * which registry a reference was sent to.
 */
class Registry {
  server!: Server
  base = ''
  /** `registry/repository` → tag → manifest body. */
  tags = new Map<string, Map<string, string>>()
  /** Digests still served, whatever the tags point at now. */
  blobs = new Map<string, string>()
  omitDigestHeader = false
  requests: Array<{ method: string; path: string; accept?: string; authorization?: string }> = []

  put(repo: string, tag: string, body: string) {
    if (!this.tags.has(repo)) this.tags.set(repo, new Map())
    this.tags.get(repo)!.set(tag, body)
    this.blobs.set(sha(body), body)
    return sha(body)
  }

  async start() {
    this.server = createServer((req, res) => this.handle(req, res))
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r))
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  private handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url!, this.base)
    this.requests.push({ method: req.method!, path: url.pathname + url.search, accept: req.headers.accept, authorization: req.headers.authorization })
    if (url.pathname === '/token') {
      const scope = url.searchParams.get('scope') ?? ''
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ token: `t:${url.searchParams.get('service')}:${scope}` }))
      return
    }
    const m = /^\/([^/]+)\/v2\/(.+)\/manifests\/([^/]+)$/.exec(url.pathname)
    if (!m) { res.statusCode = 404; res.end(); return }
    const [, registry, repository, reference] = m as unknown as [string, string, string, string]
    const scope = `repository:${repository}:pull`
    if (req.headers.authorization !== `Bearer t:${registry}:${scope}`) {
      res.statusCode = 401
      res.setHeader('www-authenticate', `Bearer realm="${this.base}/token",service="${registry}",scope="${scope}"`)
      res.end()
      return
    }
    const body = reference.startsWith('sha256:') ? this.blobs.get(reference) : this.tags.get(`${registry}/${repository}`)?.get(reference)
    if (body === undefined || !req.headers.accept?.includes(INDEX)) { res.statusCode = 404; res.end(); return }
    res.setHeader('content-type', INDEX)
    if (!this.omitDigestHeader) res.setHeader('docker-content-digest', sha(body))
    res.setHeader('content-length', Buffer.byteLength(body))
    res.end(req.method === 'HEAD' ? undefined : body)
  }

  stop() { return new Promise<void>((r) => { this.server.closeAllConnections(); this.server.close(() => r()) }) }
}

const registry = new Registry()
const endpoint = (host: string) => `${registry.base}/${host}`
let dir = ''
const lines: string[] = []
const out = (line: string) => { lines.push(line) }
const read = (file: string) => readFile(join(dir, file), 'utf8')

beforeAll(() => registry.start())
afterAll(() => registry.stop())
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-infer-pin-'))
  for (const file of PINNED_DOCKERFILES) {
    await mkdir(dirname(join(dir, file)), { recursive: true })
    await cp(join(ROOT, file), join(dir, file))
  }
  registry.tags.clear()
  registry.blobs.clear()
  registry.requests = []
  registry.omitDigestHeader = false
  lines.length = 0
})
afterEach(() => rm(dir, { recursive: true, force: true }))

describe('image references', () => {
  it('splits registry, repository, tag and digest as the v2 API addresses them', () => {
    const d = `sha256:${'a'.repeat(64)}`
    expect(parseImageRef(`node:24.21.0-bookworm-slim@${d}`)).toMatchObject({ registry: 'docker.io', repository: 'library/node', tag: '24.21.0-bookworm-slim', digest: d, named: 'node:24.21.0-bookworm-slim' })
    expect(parseImageRef('public.ecr.aws/lambda/nodejs:24')).toMatchObject({ registry: 'public.ecr.aws', repository: 'lambda/nodejs', tag: '24', digest: undefined })
    expect(parseImageRef('nvidia/cuda:12.9.1-cudnn-runtime-ubuntu22.04')).toMatchObject({ registry: 'docker.io', repository: 'nvidia/cuda', tag: '12.9.1-cudnn-runtime-ubuntu22.04' })
    expect(parseImageRef('localhost:5000/team/app')).toMatchObject({ registry: 'localhost:5000', repository: 'team/app', tag: undefined })
    expect(() => parseImageRef('node:24@sha256:abc')).toThrow(/sha256:<64 hex>/)
  })

  it('reads a Bearer challenge', () => {
    expect(parseChallenge('Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/node:pull"'))
      .toEqual({ realm: 'https://auth.docker.io/token', service: 'registry.docker.io', scope: 'repository:library/node:pull' })
    expect(parseChallenge('Basic realm="x"')).toBeUndefined()
  })
})

describe('rewriting a Dockerfile', () => {
  it('changes only the ARG line of the named base', async () => {
    const before = await read('infra/container/Dockerfile.gpu')
    const value = `nvidia/cuda:12.9.1-cudnn-runtime-ubuntu22.04@sha256:${'b'.repeat(64)}`
    const after = rewriteArg(before, 'CUDA_IMAGE', value)
    const [a, b] = [before.split('\n'), after.split('\n')]
    expect(b).toHaveLength(a.length)
    const changed = a.flatMap((line, i) => (line === b[i] ? [] : [[line, b[i]]]))
    expect(changed).toEqual([['ARG CUDA_IMAGE=nvidia/cuda:12.9.1-cudnn-runtime-ubuntu22.04', `ARG CUDA_IMAGE=${value}`]])
    expect(parseBases(after).froms.at(-1)!.arg!.ref.digest).toBe(`sha256:${'b'.repeat(64)}`)
    expect(() => rewriteArg(before, 'NOPE', value)).toThrow(/no base ARG NOPE/)
  })

  it('refuses a FROM that names an ARG with no leading default', () => {
    expect(() => parseBases('FROM ${BASE}\n')).toThrow(/no leading ARG BASE/)
    // An ARG after the first FROM is a stage's, not the FROM's (Docker's scoping).
    expect(() => parseBases('FROM a:1 AS one\nARG BASE=b:2\nFROM ${BASE}\n')).toThrow(/no leading ARG BASE/)
  })
})

describe('npm run images:pin against a v2 registry', () => {
  const publish = () => ({
    node: registry.put('docker.io/library/node', '24.21.0-bookworm-slim', '{"manifests":["node"]}'),
    lambda: registry.put('public.ecr.aws/lambda/nodejs', '24', '{"manifests":["lambda"]}'),
    cuda: registry.put('docker.io/nvidia/cuda', '12.9.1-cudnn-runtime-ubuntu22.04', '{"manifests":["cuda"]}'),
  })

  it('pins every base to the digest its tag resolves to, through the token flow, and touches no other line', async () => {
    const digests = publish()
    const before = await Promise.all(PINNED_DOCKERFILES.map(read))
    expect(await pin({ root: dir, check: false, registry: { endpoint }, out })).toBe(0)
    const after = await Promise.all(PINNED_DOCKERFILES.map(read))
    const changed = before.flatMap((text, f) => text.split('\n').flatMap((line, i) => (line === after[f]!.split('\n')[i] ? [] : [after[f]!.split('\n')[i]])))
    expect(changed).toEqual([
      `ARG NODE_IMAGE=node:24.21.0-bookworm-slim@${digests.node}`,
      `ARG NODE_IMAGE=node:24.21.0-bookworm-slim@${digests.node}`,
      `ARG CUDA_IMAGE=nvidia/cuda:12.9.1-cudnn-runtime-ubuntu22.04@${digests.cuda}`,
      `ARG LAMBDA_NODE_IMAGE=public.ecr.aws/lambda/nodejs:24@${digests.lambda}`,
    ])
    // Anonymous first, then the token the 401 named, then the manifest with it and the index types.
    const heads = registry.requests.filter((r) => r.method === 'HEAD')
    expect(heads.every((r) => r.accept === MANIFEST_ACCEPT)).toBe(true)
    expect(registry.requests.slice(0, 3).map((r) => [r.method, r.path.split('?')[0], r.authorization])).toEqual([
      ['HEAD', '/docker.io/v2/library/node/manifests/24.21.0-bookworm-slim', undefined],
      ['GET', '/token', undefined],
      ['HEAD', '/docker.io/v2/library/node/manifests/24.21.0-bookworm-slim', 'Bearer t:docker.io:repository:library/node:pull'],
    ])
    expect(lines.join('\n')).toContain('(index)')
    // Pinned and current: --check passes and changes nothing.
    lines.length = 0
    expect(await pin({ root: dir, check: true, registry: { endpoint }, out })).toBe(0)
    expect(await Promise.all(PINNED_DOCKERFILES.map(read))).toEqual(after)
    expect(lines.filter((l) => l.endsWith('current (index)'))).toHaveLength(4)
  })

  it('--check exits 1 when a tag has moved, when a pinned digest no longer resolves, and when a base is not pinned', async () => {
    publish()
    await pin({ root: dir, check: false, registry: { endpoint }, out })
    const pinnedText = await Promise.all(PINNED_DOCKERFILES.map(read))

    const moved = registry.put('docker.io/library/node', '24.21.0-bookworm-slim', '{"manifests":["node, rebuilt"]}')
    lines.length = 0
    expect(await pin({ root: dir, check: true, registry: { endpoint }, out })).toBe(1)
    expect(lines.filter((l) => l.includes('has moved'))).toHaveLength(2)
    expect(lines.join('\n')).toContain(`now ${moved}`)
    expect(await Promise.all(PINNED_DOCKERFILES.map(read))).toEqual(pinnedText)

    const lambda = parseBases(pinnedText[2]!).args[0]!.ref.digest!
    registry.blobs.delete(lambda)
    lines.length = 0
    expect(await pin({ root: dir, check: true, registry: { endpoint }, out })).toBe(1)
    expect(lines).toContain(`infra/aws/Dockerfile.lambda LAMBDA_NODE_IMAGE: pinned ${lambda} no longer resolves`)

    await writeFile(join(dir, PINNED_DOCKERFILES[2]), rewriteArg(pinnedText[2]!, 'LAMBDA_NODE_IMAGE', 'public.ecr.aws/lambda/nodejs:24'))
    lines.length = 0
    expect(await pin({ root: dir, check: true, files: [PINNED_DOCKERFILES[2]], registry: { endpoint }, out })).toBe(1)
    expect(lines).toEqual([expect.stringMatching(/^infra\/aws\/Dockerfile\.lambda LAMBDA_NODE_IMAGE: public\.ecr\.aws\/lambda\/nodejs:24 is not pinned by digest \(now sha256:[0-9a-f]{64}\)$/)])
  })

  it('hashes the manifest body when a registry leaves Docker-Content-Digest off a HEAD', async () => {
    const digests = publish()
    registry.omitDigestHeader = true
    const ref = parseImageRef('public.ecr.aws/lambda/nodejs:24')
    expect(await resolveManifest(ref, '24', { endpoint })).toEqual({ digest: digests.lambda, mediaType: INDEX })
    expect(registry.requests.at(-1)!.method).toBe('GET')
    expect(await resolveManifest(ref, 'no-such-tag', { endpoint })).toBeUndefined()
  })

  it('fails with one line naming the registry when it cannot be reached, and changes nothing', async () => {
    const closed = createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((r) => closed.close(() => r()))
    const before = await Promise.all(PINNED_DOCKERFILES.map(read))
    expect(await pin({ root: dir, check: false, registry: { endpoint: () => `http://127.0.0.1:${port}` }, out })).toBe(2)
    expect(lines).toEqual([`images:pin: 127.0.0.1:${port} unreachable (ECONNREFUSED); nothing was changed past this point`])
    expect(await Promise.all(PINNED_DOCKERFILES.map(read))).toEqual(before)
  })

  it('gives up on a registry that accepts and never answers, within its timeout', async () => {
    const silent = createServer(() => { /* never answers */ })
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    const port = (silent.address() as AddressInfo).port
    try {
      expect(await pin({ root: dir, check: true, registry: { endpoint: () => `http://127.0.0.1:${port}`, timeoutMs: 300 }, out })).toBe(2)
      expect(lines).toEqual([`images:pin: 127.0.0.1:${port} unreachable (TimeoutError); nothing was checked past this point`])
    } finally {
      silent.closeAllConnections()
      await new Promise<void>((r) => silent.close(() => r()))
    }
  })
})
