/**
 * `npm run images:pin`: resolves each base ARG's tag (tools/images/pins.ts) to the digest its
 * registry serves now, through the registry's HTTP API v2 (anonymous pull token from the realm the
 * registry's 401 names: auth.docker.io for Docker Hub, public.ecr.aws/token for ECR Public), and
 * rewrites the ARG lines as `name:tag@sha256:<digest>`. The digest is the manifest's as the
 * registry sends it with the index Accept types first: the multi-platform index for a multi-arch
 * tag, so one pin serves every platform.
 *
 * `npm run images:pin -- --check` changes nothing: exit 1 when a pinned digest no longer resolves,
 * the tag has moved to another digest, or a base is not pinned. Exit 2 when a registry cannot be
 * reached (one line saying which).
 */
import { createHash } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PINNED_DOCKERFILES, parseBases, pinned, rewriteArg, type ImageRef } from './pins.ts'

/** Index types first; a single-platform tag is answered with its manifest. */
export const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json;q=0.5',
  'application/vnd.docker.distribution.manifest.v2+json;q=0.5',
].join(', ')

export interface RegistryOptions {
  /** The v2 API's base URL for a registry host (a test points it at a local server). */
  endpoint?: (registry: string) => string
  /** Per request. */
  timeoutMs?: number
}

const defaultEndpoint = (registry: string) => `https://${registry === 'docker.io' ? 'registry-1.docker.io' : registry}`

export class RegistryUnreachable extends Error {}

/** `Bearer realm="…",service="…",scope="…"` → its parameters. */
export const parseChallenge = (header: string): Record<string, string> | undefined => {
  const m = /^Bearer\s+(.*)$/i.exec(header.trim())
  if (!m) return undefined
  return Object.fromEntries([...m[1]!.matchAll(/([A-Za-z]+)="([^"]*)"/g)].map((p) => [p[1]!.toLowerCase(), p[2]!]))
}

const request = async (url: string, init: RequestInit, timeoutMs: number): Promise<Response> => {
  try {
    return await fetch(url, { ...init, redirect: 'follow', signal: AbortSignal.timeout(timeoutMs) })
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name
    throw new RegistryUnreachable(`${new URL(url).host} unreachable (${cause})`)
  }
}

export interface Resolved { digest: string; mediaType: string }

/**
 * HEAD the manifest of `reference` (a tag or a digest) and read Docker-Content-Digest (a GET and
 * the body's sha256 when a registry leaves the header off). Undefined when the registry answers 404.
 */
export const resolveManifest = async (ref: ImageRef, reference: string, opts: RegistryOptions = {}): Promise<Resolved | undefined> => {
  const timeoutMs = opts.timeoutMs ?? 10_000
  const url = `${(opts.endpoint ?? defaultEndpoint)(ref.registry)}/v2/${ref.repository}/manifests/${reference}`
  const headers: Record<string, string> = { accept: MANIFEST_ACCEPT }
  let res = await request(url, { method: 'HEAD', headers }, timeoutMs)
  if (res.status === 401) {
    const challenge = parseChallenge(res.headers.get('www-authenticate') ?? '')
    if (!challenge?.realm) throw new Error(`${url}: 401 without a Bearer challenge`)
    const tokenUrl = new URL(challenge.realm)
    if (challenge.service) tokenUrl.searchParams.set('service', challenge.service)
    tokenUrl.searchParams.set('scope', challenge.scope ?? `repository:${ref.repository}:pull`)
    const tokenRes = await request(tokenUrl.href, {}, timeoutMs)
    if (!tokenRes.ok) throw new Error(`${tokenUrl.origin}${tokenUrl.pathname}: token request answered ${tokenRes.status}`)
    const body = await tokenRes.json() as { token?: string; access_token?: string }
    const token = body.token ?? body.access_token ?? (() => { throw new Error(`${tokenUrl.origin}${tokenUrl.pathname}: no token in the answer`) })()
    headers.authorization = `Bearer ${token}`
    res = await request(url, { method: 'HEAD', headers }, timeoutMs)
  }
  if (res.status === 404) return undefined
  if (!res.ok) throw new Error(`${url}: ${res.status}`)
  const mediaType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim()
  const header = res.headers.get('docker-content-digest')
  if (header) return { digest: header, mediaType }
  const got = await request(url, { headers }, timeoutMs)
  if (!got.ok) throw new Error(`${url}: ${got.status}`)
  return { digest: `sha256:${createHash('sha256').update(Buffer.from(await got.arrayBuffer())).digest('hex')}`, mediaType }
}

const isIndex = (mediaType: string) => /image\.index|manifest\.list/.test(mediaType)

export interface PinOptions { root: string; check: boolean; files?: readonly string[]; registry?: RegistryOptions; out?: (line: string) => void }

/** Pins (or with `check`, verifies) every base; the process exit code. */
export const pin = async ({ root, check, files = PINNED_DOCKERFILES, registry, out = (l) => process.stdout.write(`${l}\n`) }: PinOptions): Promise<number> => {
  let drift = 0
  try {
    for (const file of files) {
      let text = await readFile(join(root, file), 'utf8')
      for (const { name, ref } of parseBases(text).args) {
        const where = `${file} ${name}`
        if (ref.tag === undefined) { out(`${where}: ${ref.raw} has no tag (pin a tag and its digest)`); drift++; continue }
        const current = await resolveManifest(ref, ref.tag, registry)
        if (!current) { out(`${where}: ${ref.named} not found in ${ref.registry}`); drift++; continue }
        const kind = isIndex(current.mediaType) ? 'index' : `single-platform manifest, ${current.mediaType || 'type not given'}`
        if (check) {
          if (ref.digest === undefined) { out(`${where}: ${ref.named} is not pinned by digest (now ${current.digest})`); drift++; continue }
          if (!(await resolveManifest(ref, ref.digest, registry))) { out(`${where}: pinned ${ref.digest} no longer resolves`); drift++; continue }
          if (current.digest !== ref.digest) { out(`${where}: ${ref.named} has moved: pinned ${ref.digest}, now ${current.digest} (${kind})`); drift++; continue }
          out(`${where}: ${ref.raw} current (${kind})`)
        } else if (current.digest !== ref.digest) {
          text = rewriteArg(text, name, pinned(ref, current.digest))
          out(`${where}: pinned ${pinned(ref, current.digest)} (${kind})`)
        } else {
          out(`${where}: ${ref.raw} unchanged`)
        }
      }
      if (!check) await writeFile(join(root, file), text)
    }
  } catch (err) {
    if (err instanceof RegistryUnreachable) { out(`images:pin: ${err.message}; nothing was ${check ? 'checked' : 'changed'} past this point`); return 2 }
    throw err
  }
  // Without --check, `drift` counts only the bases that could not be pinned.
  return drift > 0 ? 1 : 0
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const unknown = args.filter((a) => a !== '--check')
  if (unknown.length) { process.stderr.write(`usage: npm run images:pin [-- --check] (unknown: ${unknown.join(' ')})\n`); process.exit(2) }
  process.exitCode = await pin({ root: fileURLToPath(new URL('../../', import.meta.url)), check: args.includes('--check') })
}
