/**
 * The base images of the committed Dockerfiles, as pinned (issue 31 §2): each base is named once,
 * as a leading `ARG NAME=name:tag@sha256:<digest>`, and every `FROM` uses the ARG. Read by
 * `images:pin` (which rewrites the ARG lines), `test:images` (which substitutes stand-ins for
 * absent pinned bases) and the pinned-bases test.
 */

/** The Dockerfiles whose bases are pinned, relative to the repository root. */
export const PINNED_DOCKERFILES = ['infra/container/Dockerfile', 'infra/container/Dockerfile.gpu', 'infra/aws/Dockerfile.lambda'] as const

const DIGEST = /^sha256:[0-9a-f]{64}$/

/** An image reference split as a registry's HTTP API v2 addresses it. */
export interface ImageRef {
  /** As written, e.g. `node:24.21.0-bookworm-slim@sha256:…`. */
  raw: string
  /** `docker.io` for Docker Hub's short names. */
  registry: string
  /** `library/node` for Docker Hub's official images. */
  repository: string
  tag: string | undefined
  digest: string | undefined
  /** `name:tag` as written, without the digest: the name a local stand-in is built under. */
  named: string
}

export const parseImageRef = (raw: string): ImageRef => {
  const at = raw.indexOf('@')
  const named = at < 0 ? raw : raw.slice(0, at)
  const digest = at < 0 ? undefined : raw.slice(at + 1)
  if (digest !== undefined && !DIGEST.test(digest)) throw new Error(`${raw}: the digest is not sha256:<64 hex>`)
  const colon = named.lastIndexOf(':')
  const hasTag = colon > named.lastIndexOf('/')
  const name = hasTag ? named.slice(0, colon) : named
  const tag = hasTag ? named.slice(colon + 1) : undefined
  const [first, ...rest] = name.split('/')
  // Docker's rule: the first component is a registry host when it has a dot or a port, or is localhost.
  const explicitHost = rest.length > 0 && (first!.includes('.') || first!.includes(':') || first === 'localhost')
  const registry = explicitHost ? first! : 'docker.io'
  const path = explicitHost ? rest.join('/') : name
  const repository = registry === 'docker.io' && !path.includes('/') ? `library/${path}` : path
  return { raw, registry, repository, tag, digest, named }
}

/** A leading `ARG NAME=<image>` that a `FROM` uses: one base of a Dockerfile. */
export interface BaseArg {
  name: string
  ref: ImageRef
  /** 0-based line of the ARG. */
  line: number
}

export interface From {
  /** As written (`${NODE_IMAGE}`, `builder`, …). */
  image: string
  stage: string | undefined
  /** The base ARG it names, if any. */
  arg: BaseArg | undefined
}

const ARG_LINE = /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)\s*$/
const FROM_LINE = /^FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?\s*$/i
const ARG_USE = /^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$/

/** The FROMs of a Dockerfile, each with the leading ARG it names (ARGs before the first FROM only, as Docker scopes them). */
export const parseBases = (text: string): { args: BaseArg[]; froms: From[] } => {
  const lines = text.split('\n')
  const leading = new Map<string, { value: string; line: number }>()
  const froms: Array<{ image: string; stage: string | undefined }> = []
  lines.forEach((line, i) => {
    const from = FROM_LINE.exec(line)
    if (from) froms.push({ image: from[1]!, stage: from[2] })
    const arg = froms.length === 0 ? ARG_LINE.exec(line) : null
    if (arg) leading.set(arg[1]!, { value: arg[2]!, line: i })
  })
  const args = new Map<string, BaseArg>()
  const resolved = froms.map(({ image, stage }): From => {
    const name = ARG_USE.exec(image)?.[1]
    const found = name === undefined ? undefined : leading.get(name)
    if (name !== undefined && found === undefined) throw new Error(`FROM ${image}: no leading ARG ${name} with a default`)
    if (name === undefined || found === undefined) return { image, stage, arg: undefined }
    const arg = args.get(name) ?? { name, ref: parseImageRef(found.value), line: found.line }
    args.set(name, arg)
    return { image, stage, arg }
  })
  return { args: [...args.values()], froms: resolved }
}

/** The Dockerfile with ARG `name`'s default set to `value`; nothing else changes. */
export const rewriteArg = (text: string, name: string, value: string): string => {
  const lines = text.split('\n')
  const arg = parseBases(text).args.find((a) => a.name === name) ?? (() => { throw new Error(`no base ARG ${name}`) })()
  lines[arg.line] = `ARG ${name}=${value}`
  return lines.join('\n')
}

/** `name:tag@digest`. */
export const pinned = (ref: ImageRef, digest: string): string => `${ref.named}@${digest}`
