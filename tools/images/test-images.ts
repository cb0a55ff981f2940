/**
 * `npm run test:images` (issue 31 §1): builds the CPU and Lambda images from the committed
 * Dockerfiles with podman and runs them as production would — the fetch-models init step against
 * s3rver with the Deployment's security context, the backend with the models volume read-only,
 * readiness, infer with and without the bearer, a short keep-alive load, SIGTERM losing nothing,
 * the HEALTHCHECK, `podman kube play` of the committed rendered CPU Deployment, and the Lambda
 * handler. Exits non-zero on the first failed check; cleans up what it started, but keeps the
 * built images (and any stand-in base) so a rerun only rebuilds changed layers.
 *
 * Base images cannot be pulled here (no Docker Hub / ECR): a pinned base (name:tag@digest) that is
 * not in local storage is replaced, through its ARG, by a stand-in built under name:tag from Debian
 * bookworm (debootstrap --variant=minbase) plus the project's pinned Node (the `node`
 * devDependency's binary) and the build machine's npm, and the run says so. The Lambda stand-in has LAMBDA_TASK_ROOT but no runtime interface client (it is
 * not on npm as a prebuilt; the emulator is a GitHub release binary), so the handler module is
 * invoked directly in the image with `node`, which is stated in the output.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, readFile, readdir, realpath, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments, stringify } from 'yaml'
import { parseBases } from './pins.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const require = createRequire(import.meta.url)
const CA_BUNDLE = process.env.NPM_CA_BUNDLE ?? '/etc/ssl/certs/ca-certificates.crt'
const CACHE = process.env.IMAGES_CACHE ?? '/var/cache/edge-infer-images'
const CPU_IMAGE = 'localhost/edge-infer-backend:test'
const LAMBDA_IMAGE = 'localhost/edge-infer-lambda:test'
const STANDIN_ROOTFS = 'localhost/edge-infer-standin/bookworm-minbase:latest'
const PREFIX = 'edge-infer-imgtest'
const STANDIN_LABEL = 'io.edge-infer.stand-in'
const TOKEN = 'imgtest-infer-token'
const MODEL = 'credit-risk'
const BUCKET = 'edge-infer-models'
const DEADLINE = Date.now() + Number(process.env.TEST_IMAGES_BUDGET_S ?? 1500) * 1000

const started = performance.now()
const log = (msg: string) => process.stdout.write(`[test:images +${((performance.now() - started) / 1000).toFixed(1)}s] ${msg}\n`)
const fail = (msg: string): never => { throw new Error(msg) }
const check = (ok: boolean, msg: string) => { if (!ok) fail(msg); log(`ok   ${msg}`) }

let scratch = ''
let containersConf = ''

interface Ran { code: number; stdout: string; stderr: string }
/** A command with the run's containers.conf, bounded by `timeoutS` and the whole run's budget. */
const run = (cmd: string, args: string[], opts: { timeoutS?: number; allowFail?: boolean; inherit?: boolean } = {}): Promise<Ran> =>
  new Promise((resolve, reject) => {
    const timeout = Math.min((opts.timeoutS ?? 120) * 1000, Math.max(1000, DEADLINE - Date.now()))
    const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...(containersConf ? { CONTAINERS_CONF: containersConf } : {}) }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d; if (opts.inherit) process.stdout.write(d) })
    child.stderr.on('data', (d: Buffer) => { stderr += d; if (opts.inherit) process.stderr.write(d) })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const result = { code: code ?? (signal ? 128 : 1), stdout, stderr }
      if (result.code !== 0 && !opts.allowFail) reject(new Error(`${cmd} ${args.join(' ')} exited ${code ?? signal}${signal === 'SIGKILL' ? ' (timed out)' : ''}\n${stderr.slice(-3000)}`))
      else resolve(result)
    })
  })
const podman = (args: string[], opts?: Parameters<typeof run>[2]) => run('podman', args, opts)
const has = async (tool: string) => (await run('sh', ['-c', `command -v ${tool}`], { allowFail: true })).code === 0

const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const server = createServer()
  server.listen(0, '127.0.0.1', () => { const { port } = server.address() as { port: number }; server.close(() => resolve(port)) })
  server.on('error', reject)
})

// --- tools and this sandbox's runtime settings ---

const ensureTools = async () => {
  const missing = [] as string[]
  // catatonit: podman builds its pod infra (pause) image locally from it, as nothing is pulled.
  for (const [tool, pkg] of [['podman', 'podman'], ['buildah', 'buildah'], ['runc', 'runc'], ['debootstrap', 'debootstrap'], ['newuidmap', 'uidmap'], ['catatonit', 'catatonit']] as const) {
    if (!(await has(tool))) missing.push(pkg)
  }
  if (missing.length) {
    log(`installing from Debian: ${missing.join(' ')}`)
    await run('apt-get', ['update', '-qq'], { timeoutS: 300 })
    await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing, 'slirp4netns', 'fuse-overlayfs'], { timeoutS: 600 })
  }
  // This sandbox: runc (crun is not installed with Debian's podman here), and nofile/nproc limits
  // runc may set here (it cannot raise them to podman's defaults, 1048576 and 4194304: EPERM).
  // Set for this run only, through CONTAINERS_CONF; the images are not changed.
  const nofile = Number((await run('bash', ['-c', 'ulimit -Hn'])).stdout.trim()) || 1024
  const nproc = Math.min(32768, Number((await run('bash', ['-c', 'ulimit -Hu'])).stdout.trim()) || 4096)
  containersConf = join(scratch, 'containers.conf')
  await writeFile(containersConf, `[containers]\ndefault_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]\n\n[engine]\nruntime = "runc"\n`)
  log(`sandbox runtime settings for this run only (CONTAINERS_CONF): runtime = runc, default_ulimits nofile=${nofile} nproc=${nproc}`)
}

// --- stand-in bases ---

const imageExists = async (name: string) => (await podman(['image', 'exists', name], { allowFail: true })).code === 0

const standinRootfs = async () => {
  if (await imageExists(STANDIN_ROOTFS)) return
  const rootfs = join(CACHE, 'rootfs-bookworm')
  if (!existsSync(join(rootfs, 'etc/debian_version'))) {
    log(`debootstrap --variant=minbase bookworm -> ${rootfs}`)
    await rm(rootfs, { recursive: true, force: true })
    await mkdir(CACHE, { recursive: true })
    await run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, 'http://deb.debian.org/debian'], { timeoutS: 900 })
  }
  // apt lists and caches are not part of a slim base.
  await run('sh', ['-c', `tar -C ${rootfs} --exclude=./var/cache/apt/archives/*.deb --exclude=./var/lib/apt/lists/* --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* -c . | podman import --change 'CMD ["bash"]' - ${STANDIN_ROOTFS}`], { timeoutS: 300 })
}

/** The project's Node binary (the `node` devDependency) and the build machine's npm. */
const nodeAndNpm = async (): Promise<{ node: string; npm: string }> => {
  const node = join(dirname(require.resolve('node/package.json')), 'bin/node')
  existsSync(node) || fail(`${node} is missing: run npm ci (the node devDependency's install script brings it)`)
  const npmCli = await realpath((await run('sh', ['-c', 'command -v npm'])).stdout.trim())
  return { node, npm: dirname(dirname(npmCli)) }
}

const buildStandin = async (name: string, lambda: boolean) => {
  await standinRootfs()
  const context = await mkdtemp(join(scratch, 'standin-'))
  const { node, npm } = await nodeAndNpm()
  await cp(node, join(context, 'node'))
  await cp(npm, join(context, 'npm'), { recursive: true })
  const version = (await run(node, ['--version'])).stdout.trim()
  await writeFile(join(context, 'Containerfile'), [
    `FROM ${STANDIN_ROOTFS}`,
    `LABEL ${STANDIN_LABEL}="Debian bookworm minbase + Node ${version}${lambda ? ' + LAMBDA_TASK_ROOT, no runtime interface client' : ''}"`,
    'COPY node /usr/local/bin/node',
    'COPY npm /usr/local/lib/node_modules/npm',
    'RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx && node --version',
    ...(lambda
      ? ['ENV LAMBDA_TASK_ROOT=/var/task LAMBDA_RUNTIME_DIR=/var/runtime', 'RUN mkdir -p /var/task /var/runtime', 'WORKDIR /var/task',
        // No runtime interface client in the stand-in: say so instead of failing obscurely.
        'ENTRYPOINT ["/bin/sh", "-c", "echo stand-in Lambda base: no runtime interface client >&2; exit 64"]']
      : ['CMD ["node"]']),
    '',
  ].join('\n'))
  await podman(['build', '--pull=never', '--format', 'docker', '-t', name, '-f', join(context, 'Containerfile'), context], { timeoutS: 300 })
  log(`STAND-IN used for ${name}: Debian bookworm minbase + Node ${version} (the node devDependency) + the build machine's npm${lambda ? ' + LAMBDA_TASK_ROOT=/var/task (no runtime interface client)' : ''}`)
}

const ensureBase = async (name: string, lambda: boolean) => {
  if (await imageExists(name)) {
    // A stand-in starts from the imported Debian root: its first layer is that image's.
    const firstLayer = async (image: string) => (await podman(['image', 'inspect', '--format', '{{index .RootFS.Layers 0}}', image], { allowFail: true })).stdout.trim()
    const standin = (await imageExists(STANDIN_ROOTFS)) && (await firstLayer(name)) === (await firstLayer(STANDIN_ROOTFS))
    log(standin ? `STAND-IN used for ${name} (made by an earlier run): Debian bookworm minbase + the project's Node` : `base ${name}: an image under this name in local storage, not a stand-in`)
    return
  }
  await buildStandin(name, lambda)
}

/**
 * The build args for a Dockerfile's bases (each a leading ARG, pinned name:tag@digest). A pinned
 * image present in local storage is used as is. Otherwise a local build cannot stand in under the
 * pinned reference (the digest is the registry manifest's), so the stand-in is built under
 * name:tag and passed as `--build-arg ARG=name:tag`, printed as a substitution.
 */
const baseBuildArgs = async (dockerfile: string, lambda: boolean): Promise<string[]> => {
  const flags: string[] = []
  for (const { name, ref } of parseBases(await readFile(join(ROOT, dockerfile), 'utf8')).args) {
    if (ref.digest !== undefined && await imageExists(ref.raw)) { log(`base ${ref.raw}: the pinned image, present in local storage`); continue }
    await ensureBase(ref.named, lambda)
    if (ref.digest === undefined) continue
    flags.push('--build-arg', `${name}=${ref.named}`)
    log(`SUBSTITUTION for ${dockerfile}: --build-arg ${name}=${ref.named} (the pinned ${ref.raw} is not in local storage)`)
  }
  return flags
}

const buildImage = async (dockerfile: string, tag: string, extra: string[] = []) => {
  log(`podman build -f ${dockerfile} -t ${tag}`)
  await podman(['build', '--pull=never', '--format', 'docker', '--layers', '--secret', `id=npm_ca,src=${CA_BUNDLE}`, '-f', dockerfile, '-t', tag, ...extra, '.'], { timeoutS: 900, inherit: !!process.env.TEST_IMAGES_VERBOSE })
  const size = Number((await podman(['image', 'inspect', '--format', '{{.Size}}', tag])).stdout.trim())
  log(`built ${tag}: ${(size / 1e6).toFixed(0)} MB`)
  return size
}

// --- s3rver with the committed model repository ---

interface S3rverInstance { run(): Promise<{ port: number }>; close(): Promise<void> }
type S3rverClass = new (options: { address: string; port: number; directory: string; silent: boolean; configureBuckets: Array<{ name: string }> }) => S3rverInstance

const startS3 = async (): Promise<{ s3: S3rverInstance; port: number }> => {
  const S3rver = require('s3rver') as S3rverClass
  // On every address: the kube-played pod reaches it through the bridge's gateway.
  const s3 = new S3rver({ address: '0.0.0.0', port: 0, directory: join(scratch, 's3'), silent: true, configureBuckets: [{ name: BUCKET }] })
  const { port } = await s3.run()
  const { S3Client, PutObjectCommand } = await import('@aws-sdk/client-s3')
  const client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } })
  const models = join(ROOT, 'models')
  const files = (await readdir(models, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => relative(models, join(e.parentPath, e.name)).split(sep).join('/'))
  for (const file of files) await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `repository/${file}`, Body: await readFile(join(models, file)) }))
  client.destroy()
  log(`s3rver on :${port}, ${files.length} files of models/ under s3://${BUCKET}/repository`)
  return { s3, port }
}

// --- HTTP ---

const features = { name: 'features', datatype: 'FP32', shape: [1, 23], data: Array.from({ length: 23 }, (_, i) => (i % 5) / 5) }
const inferBody = JSON.stringify({ inputs: [features] })
const infer = (base: string, token?: string) => fetch(`${base}/v2/models/${MODEL}/infer`, {
  method: 'POST', body: inferBody, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
})

const waitReady = async (base: string, timeoutS: number) => {
  const t0 = performance.now()
  for (;;) {
    try { if ((await fetch(`${base}/v2/health/ready`)).status === 200) return (performance.now() - t0) / 1000 } catch { /* not listening yet */ }
    if (performance.now() - t0 > timeoutS * 1000) fail(`${base} not ready within ${timeoutS}s`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

const securityContext = ['--read-only', '--tmpfs', '/tmp', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '--user', '10001:10001']

// --- the run ---

const made = { containers: new Set<string>(), volumes: new Set<string>(), pods: new Set<string>(), secrets: new Set<string>(), tags: new Set<string>(), kube: '' }

const cleanup = async () => {
  if (made.kube) await podman(['kube', 'down', made.kube], { allowFail: true, timeoutS: 90 })
  for (const c of made.containers) await podman(['rm', '-f', '-t', '5', c], { allowFail: true })
  for (const p of made.pods) await podman(['pod', 'rm', '-f', p], { allowFail: true })
  for (const v of made.volumes) await podman(['volume', 'rm', '-f', v], { allowFail: true })
  for (const s of made.secrets) await podman(['secret', 'rm', s], { allowFail: true })
  for (const t of made.tags) await podman(['untag', CPU_IMAGE, t], { allowFail: true })
}

const runBackend = async (s3Port: number) => {
  const volume = `${PREFIX}-models`
  await podman(['volume', 'rm', '-f', volume], { allowFail: true })
  await podman(['volume', 'create', volume])
  made.volumes.add(volume)

  // The init step: the Deployment's init container security context and memory limit; `:U` gives
  // the volume to uid 10001 as the pod's fsGroup does. Host network: s3rver is on the host.
  log('fetch-models init step (read-only root, tmpfs /tmp, cap-drop ALL, no-new-privileges, 10001:10001, 256 MiB)')
  const fetched = await podman(['run', '--rm', '--name', `${PREFIX}-fetch`, ...securityContext, '--memory', '256m', '--network', 'host',
    '-v', `${volume}:/models:U`, '-e', `MODEL_SOURCE=s3://${BUCKET}/repository`, '-e', 'MODEL_REPOSITORY=/models', '-e', `S3_ENDPOINT=http://127.0.0.1:${s3Port}`,
    '-e', 'AWS_REGION=us-east-1', '-e', 'AWS_ACCESS_KEY_ID=S3RVER', '-e', 'AWS_SECRET_ACCESS_KEY=S3RVER', CPU_IMAGE, 'dist/backend/fetch-models.js'], { timeoutS: 120 })
  check(/model repository fetched and verified/.test(fetched.stdout), 'init step fetched and verified the repository from s3rver')

  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const name = `${PREFIX}-backend`
  made.containers.add(name)
  await podman(['rm', '-f', name], { allowFail: true })
  await podman(['run', '-d', '--name', name, ...securityContext, '--memory', '1088m', '-v', `${volume}:/models:ro`, '-p', `127.0.0.1:${port}:8000`,
    '-e', `INFER_TOKEN=${TOKEN}`, '-e', 'MODEL_MEMORY_BUDGET_MB=512', '-e', 'SHUTDOWN_GRACE_MS=25000', '-e', 'LOG_LEVEL=warn', CPU_IMAGE])
  const readyS = await waitReady(base, 90)
  check(true, `backend ready in ${readyS.toFixed(1)}s (models volume read-only, read-only root, 1088 MiB)`)

  const ok = await infer(base, TOKEN)
  const answer = await ok.json() as { outputs?: Array<{ name: string; data: number[] }> }
  check(ok.status === 200 && answer.outputs?.[0]?.data.length === 2, `infer with the bearer: ${ok.status}`)
  const refused = await infer(base)
  await refused.arrayBuffer()
  check(refused.status === 401, `infer without the bearer: ${refused.status}`)

  const health = await podman(['healthcheck', 'run', name], { allowFail: true })
  check(health.code === 0, `podman healthcheck run: ${health.code === 0 ? 'healthy' : health.stdout + health.stderr}`)

  // A short keep-alive load on loopback, bounded in time.
  const autocannon = require('autocannon') as (o: object) => Promise<{ requests: { total: number }; non2xx: number; errors: number; timeouts: number; latency: { p50: number; p99: number } }>
  const load = await autocannon({ url: `${base}/v2/models/${MODEL}/infer`, method: 'POST', body: inferBody, connections: 16, duration: 5,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` } })
  check(load.requests.total > 0 && load.non2xx === 0 && load.errors === 0 && load.timeouts === 0,
    `keep-alive load: ${load.requests.total} requests at 16 connections for 5 s, non-2xx ${load.non2xx}, errors ${load.errors}, p50 ${load.latency.p50} ms, p99 ${load.latency.p99} ms`)

  // SIGTERM with requests in flight: every request already sent is answered, and the exit is 0.
  const inflight = Array.from({ length: 32 }, () => infer(base, TOKEN).then(async (r) => { await r.arrayBuffer(); return r.status }, (e: unknown) => `error ${String(e)}`))
  await new Promise((r) => setTimeout(r, 20))
  await podman(['stop', '-t', '30', name], { timeoutS: 60 })
  const statuses = await Promise.all(inflight)
  const exit = (await podman(['inspect', '--format', '{{.State.ExitCode}}', name])).stdout.trim()
  check(statuses.every((s) => s === 200), `podman stop with 32 requests in flight: ${statuses.filter((s) => s === 200).length}/32 answered 200 (${[...new Set(statuses)].join(', ')})`)
  check(exit === '0', `backend exited ${exit} on SIGTERM`)
  await podman(['rm', '-f', name], { allowFail: true })
  made.containers.delete(name)
}

/**
 * `podman kube play` of the committed rendered Deployment. Substitutions, each because podman
 * cannot do it: the image name is a tag of the built image (nothing changes in the YAML for it);
 * `fieldRef metadata.namespace` is a literal (podman resolves only metadata.name-like fields of
 * its own pod); the Secrets the Deployment references are created as podman secrets (the cluster
 * would hold them), and the init container reads the s3rver key Secret in place of IRSA; a hostPort on 127.0.0.1 publishes the container
 * port (a Service does that in a cluster); S3_ENDPOINT in the model-source Secret points at
 * s3rver through the bridge gateway.
 */
const kubePlay = async (s3Port: number) => {
  const manifest = await readFile(join(ROOT, 'infra/k8s/rendered/deployment-cpu.yaml'), 'utf8')
  const deployment = parseAllDocuments(manifest)[0]!.toJS() as {
    metadata: { namespace: string }
    spec: { template: { spec: { initContainers: Container[]; containers: Container[] } } }
  }
  interface Container { image: string; env?: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>; envFrom?: Array<{ secretRef?: { name: string } }>; ports?: Array<{ containerPort: number; hostPort?: number; hostIP?: string }> }
  const pod = deployment.spec.template.spec
  const substitutions: string[] = []
  const image = pod.containers[0]!.image
  await podman(['tag', CPU_IMAGE, image])
  made.tags.add(image)
  substitutions.push(`image ${image}: a local tag of ${CPU_IMAGE} (YAML unchanged)`)
  for (const c of [...pod.initContainers, ...pod.containers]) {
    for (const e of c.env ?? []) {
      if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') {
        delete e.valueFrom
        e.value = deployment.metadata.namespace
        substitutions.push(`${e.name}: fieldRef metadata.namespace -> "${deployment.metadata.namespace}"`)
      }
    }
  }
  // podman 4.3 removes a "once" init container racily ("cannot remove container ... as it is
  // running", containers/podman#18477, fixed later); "always" runs it on each pod start instead.
  // podman reads it from the Deployment's own metadata (and the pod template's, in later versions).
  for (const meta of [deployment as { metadata?: { annotations?: Record<string, string> } }, deployment.spec.template as { metadata?: { annotations?: Record<string, string> } }]) {
    meta.metadata = { ...meta.metadata, annotations: { ...meta.metadata?.annotations, 'io.podman.annotations.init.container.type': 'always' } }
  }
  substitutions.push('annotation io.podman.annotations.init.container.type=always (podman 4.3 races removing a "once" init container)')
  const port = await freePort()
  // Only the http port: the metrics port (METRICS_PORT) is Prometheus', not published here.
  for (const p of (pod.containers[0]!.ports ?? []).slice(0, 1)) { p.hostPort = port; p.hostIP = '127.0.0.1' }
  substitutions.push(`hostPort 127.0.0.1:${port} -> containerPort 8000 (a Service in a cluster)`)
  // The manifests fetch with workload identity (IRSA) by default; podman has none, so the static-key Secret stands in.
  pod.initContainers[0]!.envFrom = [{ secretRef: { name: 'edge-infer-model-source' } }]
  substitutions.push('init container envFrom Secret edge-infer-model-source (s3rver keys) in place of the IRSA role on the ServiceAccount')
  const gateway = (await podman(['network', 'inspect', 'podman', '--format', '{{range .Subnets}}{{.Gateway}}{{end}}'])).stdout.trim() || '10.88.0.1'
  const secrets = [
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'edge-infer-model-source' }, stringData: { S3_ENDPOINT: `http://${gateway}:${s3Port}`, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'edge-infer-backend-tokens' }, stringData: { INFER_TOKEN: TOKEN } },
  ]
  // podman 4.3 resolves secretRef/secretKeyRef from podman secrets holding the Secret's `data` as
  // a flat JSON object of base64 values (a whole Secret document is refused as "not valid JSON").
  for (const secret of secrets) {
    const file = join(scratch, `${secret.metadata.name}.json`)
    await writeFile(file, JSON.stringify(Object.fromEntries(Object.entries(secret.stringData).map(([k, v]) => [k, Buffer.from(v).toString('base64')]))))
    await podman(['secret', 'rm', secret.metadata.name], { allowFail: true })
    await podman(['secret', 'create', secret.metadata.name, file])
    made.secrets.add(secret.metadata.name)
  }
  substitutions.push(`Secrets edge-infer-model-source (s3rver at ${gateway}:${s3Port}) and edge-infer-backend-tokens created as podman secrets (the cluster would hold them)`)
  const played = join(scratch, 'deployment-cpu.played.yaml')
  await writeFile(played, stringify(deployment))
  log(`kube play substitutions:\n  - ${substitutions.join('\n  - ')}`)
  made.kube = played
  const t0 = performance.now()
  const out = await podman(['kube', 'play', '--replace', played], { timeoutS: 180, allowFail: true })
  if (out.code !== 0) fail(`podman kube play failed:\n${out.stdout}\n${out.stderr}`)
  const base = `http://127.0.0.1:${port}`
  await waitReady(base, 120)
  check(true, `kube play: init container fetched, backend ready ${((performance.now() - t0) / 1000).toFixed(1)}s after play`)
  const res = await infer(base, TOKEN)
  await res.arrayBuffer()
  check(res.status === 200, `infer through the published port of the played Deployment: ${res.status}`)
  const readOnly = await podman(['ps', '-a', '--pod', '--filter', `pod=${(await podman(['pod', 'ps', '-q', '--filter', 'name=edge-infer-backend'])).stdout.trim().split('\n')[0]}`, '--format', '{{.Names}}'], { allowFail: true })
  log(`pod containers: ${readOnly.stdout.trim().split('\n').join(', ')}`)
  await podman(['kube', 'down', played], { timeoutS: 90 })
  made.kube = ''
}

const lambdaHandler = async () => {
  // The stand-in has no runtime interface client: the handler module is imported and invoked
  // with an infer event, in the image, as the runtime would call it. A CommonJS eval with a
  // dynamic import: `--input-type=module` would be inherited by the inference worker threads.
  const script = `(async () => {
const { handler } = await import(process.env.LAMBDA_TASK_ROOT + '/dist/backend/lambda.js');
const answer = await handler(${JSON.stringify({ model_name: MODEL, inputs: [features] })});
const bad = await handler({ nonsense: true });
process.stdout.write(JSON.stringify({ answer, bad }) + '\\n');
process.exit(0)
})()`
  const name = `${PREFIX}-lambda`
  made.containers.add(name)
  const out = await podman(['run', '--rm', '--name', name, '--read-only', '--tmpfs', '/tmp', '--memory', '2048m', '--entrypoint', 'node', LAMBDA_IMAGE, '-e', script], { timeoutS: 120 })
  made.containers.delete(name)
  const { answer, bad } = JSON.parse(out.stdout.trim().split('\n').findLast((l) => l.startsWith('{"answer"')) ?? '{}') as { answer?: { outputs?: unknown[] }; bad?: { status?: number } }
  check(Array.isArray(answer?.outputs) && bad?.status === 400, 'Lambda image: handler module invoked directly (not through a runtime interface client): infer answered, a bad event is a 400 result')
}

const main = async () => {
  scratch = await mkdtemp(join(tmpdir(), 'edge-infer-images-'))
  let s3: S3rverInstance | undefined
  try {
    await ensureTools()
    const cpuArgs = await baseBuildArgs('infra/container/Dockerfile', false)
    const lambdaArgs = await baseBuildArgs('infra/aws/Dockerfile.lambda', true)
    await buildImage('infra/container/Dockerfile', CPU_IMAGE, cpuArgs)
    check((await buildImage('infra/aws/Dockerfile.lambda', LAMBDA_IMAGE, ['--ignorefile', 'infra/aws/Dockerfile.lambda.dockerignore', ...lambdaArgs])) > 0, 'Lambda image built')
    const started3 = await startS3()
    s3 = started3.s3
    await runBackend(started3.port)
    await kubePlay(started3.port)
    await lambdaHandler()
    log(`passed; kept images ${CPU_IMAGE}, ${LAMBDA_IMAGE} and any stand-in bases for a rerun (podman rmi them to reclaim space)`)
  } finally {
    await cleanup()
    await s3?.close()
    await rm(scratch, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`[test:images] FAILED: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
