import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { DockerfileParser, type Dockerfile, type Instruction, type JSONInstruction, type ModifiableInstruction } from 'dockerfile-ast'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { settingsSchema } from '../../../backend/settings.ts'
import { READINESS_PATH, readinessUrl } from '../../../infra/container/healthcheck.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const run = promisify(execFile)
const require = createRequire(import.meta.url)

const DOCKERFILES = ['infra/container/Dockerfile', 'infra/container/Dockerfile.gpu'] as const
const defaults = settingsSchema.parse({})

interface Stage {
  name: string | null
  image: string
  instructions: Instruction[]
}

/** The stages, each FROM's `${ARG}` replaced by that leading ARG's default (the bases are named once, as ARGs). */
const stagesOf = (dockerfile: Dockerfile): Stage[] => {
  const stages: Stage[] = []
  const args = new Map(dockerfile.getInitialARGs().map((a) => [a.getProperty()?.getName(), a.getProperty()?.getValue()]))
  const resolve = (image: string) => image.replace(/^\$\{(\w+)\}$/, (_, name: string) => args.get(name) ?? image)
  for (const instruction of dockerfile.getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const from = dockerfile.getFROMs().find((f) => f.getRange().start.line === instruction.getRange().start.line)!
      stages.push({ name: from.getBuildStage(), image: resolve(from.getImage() ?? ''), instructions: [] })
    } else {
      stages.at(-1)?.instructions.push(instruction)
    }
  }
  return stages
}

const only = (stage: Stage, keyword: string): Instruction[] => stage.instructions.filter((i) => i.getKeyword() === keyword)
const last = (stage: Stage, keyword: string): Instruction | undefined => only(stage, keyword).at(-1)

/** `--from=builder /app/dist dist`: the flags and the arguments, as written. */
const withFlags = (instruction: Instruction): string =>
  [...(instruction as ModifiableInstruction).getFlags().map((f) => `--${f.getName()}=${f.getValue()}`), instruction.getRawArgumentsContent()].join(' ')

/** ENV of a stage, later values winning. */
const envOf = (stage: Stage): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const instruction of only(stage, 'ENV')) {
    for (const p of (instruction as unknown as { getProperties(): Array<{ getName(): string; getValue(): string | null }> }).getProperties()) env[p.getName()] = p.getValue() ?? ''
  }
  return env
}

/** The JSON array of an exec-form ENTRYPOINT/CMD; undefined for shell form. */
const execForm = (instruction: Instruction | undefined): string[] | undefined => {
  const raw = instruction?.getRawArgumentsContent()?.trim()
  if (!raw?.startsWith('[')) return undefined
  return (instruction as JSONInstruction).getJSONStrings().map((s) => s.getJSONValue())
}

/** tsconfig.build.json, comments dropped (JSONC). */
const buildConfig = async (): Promise<{ compilerOptions: { outDir: string }; files: string[] }> =>
  JSON.parse((await readFile(join(ROOT, 'tsconfig.build.json'), 'utf8')).replace(/^\s*\/\/.*$/gm, '')) as { compilerOptions: { outDir: string }; files: string[] }

let built: string
const parsed = new Map<string, { text: string; stages: Stage[] }>()

beforeAll(async () => {
  for (const file of DOCKERFILES) {
    const text = await readFile(join(ROOT, file), 'utf8')
    parsed.set(file, { text, stages: stagesOf(DockerfileParser.parse(text)) })
  }
  // What `npm run build` emits, into a scratch folder (about 2 s): the scripts the images run must be in it.
  built = await mkdtemp(join(tmpdir(), 'edge-infer-image-build-'))
  await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', built], { cwd: ROOT })
})

afterAll(async () => {
  if (built) await rm(built, { recursive: true, force: true })
})

/** `dist/backend/server.js` (a path in the image, relative to WORKDIR) → the scratch build's file. */
const inBuild = async (imagePath: string): Promise<string> => {
  const { compilerOptions } = await buildConfig()
  const prefix = `${compilerOptions.outDir}/`
  expect(imagePath.startsWith(prefix), `${imagePath} is under ${prefix}`).toBe(true)
  return join(built, imagePath.slice(prefix.length))
}

describe.each(DOCKERFILES)('%s', (file) => {
  const stages = () => parsed.get(file)!.stages
  const final = () => stages().at(-1)!

  it('is multi-stage: a builder with the build tools runs the build, a production-only install, a runtime that copies dist/', () => {
    const byName = new Map(stages().map((s) => [s.name, s]))
    const runs = (name: string) => only(byName.get(name)!, 'RUN').map((r) => r.getRawArgumentsContent() ?? '').join('\n')
    // The builder gets production dependencies plus only what `npm run build` reads: never a full
    // `npm ci` of the devDependencies (wrangler, workerd, aws-cdk, the `node` package).
    expect(runs('builder')).toMatch(/npm ci --omit=dev/)
    expect(runs('builder')).not.toMatch(/npm ci(?! --omit=dev)/)
    expect(runs('builder')).toMatch(/\['typescript', '@types\/node', 'onnx-proto'\]/)
    expect(runs('builder')).toMatch(/test ! -e node_modules\/wrangler && test ! -e node_modules\/workerd && test ! -e node_modules\/node/)
    expect(runs('builder')).toMatch(/npm run build/)
    expect(runs('deps')).toMatch(/npm ci --omit=dev/)
    const copies = only(final(), 'COPY').map(withFlags)
    expect(copies).toEqual(expect.arrayContaining(['--from=builder /app/dist dist', '--from=deps /app/node_modules node_modules', '--from=builder /app/package.json package.json']))
    // No install or build at run time, and no dev dependencies copied over.
    expect(only(final(), 'RUN').map((r) => r.getRawArgumentsContent()).join('\n')).not.toMatch(/npm (ci|install)/)
    expect(copies.join('\n')).not.toMatch(/--from=builder \/app\/node_modules/)
  })

  it("keeps only the target platform's onnxruntime-node binaries", () => {
    const deps = stages().find((s) => s.name === 'deps')!
    const runs = only(deps, 'RUN').map((r) => r.getRawArgumentsContent() ?? '').join('\n')
    expect(runs).toMatch(/cd node_modules\/onnxruntime-node\/bin\/napi-v6/)
    expect(runs).toMatch(/find \. -mindepth 2 -maxdepth 2 -type d ! -path "?\.\/linux\/(\$arch|x64)"? -exec rm -rf \{\} \+/)
    expect(runs).toMatch(/test -f "?linux\/(\$arch|x64)\/onnxruntime_binding\.node"?/)
  })

  it("turns off onnxruntime's telemetry client", () => {
    expect(envOf(final())).toMatchObject({ ORT_DISABLE_TELEMETRY: '1' })
  })

  it("lets npm trust the build machine's CA bundle through a secret mount, never a copied file", () => {
    const installs = stages().flatMap((s) => only(s, 'RUN')).map(withFlags).filter((r) => /npm ci/.test(r))
    expect(installs.length).toBeGreaterThan(0)
    for (const r of installs) expect(r).toMatch(/^--mount=type=secret,id=npm_ca /)
    const copies = stages().flatMap((s) => only(s, 'COPY').concat(only(s, 'ADD'))).map(withFlags).join('\n')
    expect(copies).not.toMatch(/\.(pem|crt|key)\b|ca-certificates/)
  })

  it('runs as a numeric non-root user', () => {
    const user = last(final(), 'USER')?.getArgumentsContent() ?? ''
    const [uid, gid] = user.split(':')
    expect(uid).toMatch(/^[0-9]+$/)
    expect(Number(uid)).toBeGreaterThan(0)
    if (gid !== undefined) expect(Number(gid)).toBeGreaterThan(0)
  })

  it("exposes the settings schema's default PORT and listens on every address", () => {
    expect(only(final(), 'EXPOSE').map((e) => e.getArgumentsContent())).toEqual([String(defaults.PORT)])
    expect(envOf(final())).toMatchObject({ PORT: String(defaults.PORT), HOST: '0.0.0.0', MODEL_REPOSITORY: '/models' })
  })

  it('stops on SIGTERM (the signal the server drains on)', () => {
    expect(last(final(), 'STOPSIGNAL')?.getArgumentsContent()).toBe('SIGTERM')
  })

  it('ENTRYPOINT and CMD are exec form and run the built server', async () => {
    const entrypoint = execForm(last(final(), 'ENTRYPOINT'))
    const cmd = execForm(last(final(), 'CMD'))
    expect(entrypoint).toEqual(['node'])
    expect(cmd).toEqual(['dist/backend/server.js'])
    expect(existsSync(await inBuild(cmd![0]!)), 'dist/backend/server.js is emitted by tsconfig.build.json').toBe(true)
    // The init container runs the same image with this script as its argument.
    expect(existsSync(await inBuild('dist/backend/fetch-models.js'))).toBe(true)
  })

  it('HEALTHCHECK is exec form, runs a built script, and that script asks the readiness route the backend serves', async () => {
    const healthcheck = last(final(), 'HEALTHCHECK')!
    const raw = healthcheck.getRawArgumentsContent() ?? ''
    const command = /\bCMD\s+(\[.*\])\s*$/.exec(raw)
    expect(command, `exec-form CMD in: ${raw}`).not.toBeNull()
    const argv = JSON.parse(command![1]!) as string[]
    expect(argv[0]).toBe('node')
    expect(existsSync(await inBuild(argv[1]!))).toBe(true)
    expect(argv[1]).toBe('dist/infra/container/healthcheck.js')
    const env = envOf(final())
    expect(readinessUrl({ PORT: env.PORT, HOST: env.HOST })).toBe(`http://127.0.0.1:${defaults.PORT}${READINESS_PATH}`)
  })

  it('pins every base image by a tag that is not latest, Node at the version package.json pins', async () => {
    const names = new Set(stages().map((s) => s.name))
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
    for (const { image } of stages()) {
      if (names.has(image)) continue
      const tag = /:([^@/]+)$/.exec(image.split('@')[0]!)?.[1]
      expect(tag, `${image} has a tag`).toBeDefined()
      expect(tag).not.toMatch(/latest/)
      if (image.startsWith('node:')) expect(tag!.split('-')[0]).toBe(pkg.devDependencies.node)
    }
  })

  it('sets no secret in ENV or ARG', () => {
    const names = stages().flatMap((s) => [...Object.keys(envOf(s)), ...only(s, 'ARG').map((a) => a.getArgumentsContent()?.split('=')[0] ?? '')])
    for (const name of names) expect(name).not.toMatch(/SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|API_KEY|ACCESS_KEY/i)
  })
})

describe('the GPU image', () => {
  const gpu = () => parsed.get('infra/container/Dockerfile.gpu')!.stages

  it('runs on a CUDA 12 + cuDNN runtime base, linux/amd64', () => {
    expect(gpu().at(-1)!.image).toMatch(/^nvidia\/cuda:12\.\d+\.\d+-cudnn-runtime-ubuntu\d+\.\d+$/)
    expect(parsed.get('infra/container/Dockerfile.gpu')!.text.match(/^FROM (.*)$/gm)!.every((line) => line.includes('--platform=linux/amd64'))).toBe(true)
  })

  it("installs onnxruntime-node's CUDA execution provider with a switch this onnxruntime-node reads as cuda12", async () => {
    const deps = gpu().find((s) => s.name === 'deps')!
    const script = only(deps, 'RUN').map((r) => r.getRawArgumentsContent() ?? '').join('\n')
    const install = /((?:[A-Z_]+=\S+\s+)+)node node_modules\/onnxruntime-node\/script\/install\.js/.exec(script)
    expect(install, 'an explicit run of the install script').not.toBeNull()
    const switches = Object.fromEntries(install![1]!.trim().split(/\s+/).map((kv) => kv.split('=') as [string, string]))
    // Ask the installed package's own parser what those variables mean (argv and npm config left out).
    const parser = join(ROOT, 'node_modules/onnxruntime-node/script/install-utils.js')
    const { stdout } = await run(process.execPath, ['-e', `process.stdout.write(JSON.stringify(require(${JSON.stringify(parser)}).parseInstallFlag() ?? null))`], { env: { PATH: process.env.PATH ?? '', ...switches } })
    expect(JSON.parse(stdout)).toBe('cuda12')
    // The files the build insists on are the ones that manifest installs.
    const metadata = require(join(ROOT, 'node_modules/onnxruntime-node/script/install-metadata.js')) as { manifests: Record<string, Record<string, unknown>> }
    for (const lib of Object.keys(metadata.manifests['linux/x64:cuda12']!).filter((f) => /providers_(cuda|shared)/.test(f))) {
      expect(script).toContain(`test -f node_modules/onnxruntime-node/bin/napi-v6/linux/x64/${lib.replace('./', '')}`)
    }
    // npm ci itself must not run it a second time (or with other switches).
    expect(script).toMatch(/ONNXRUNTIME_NODE_INSTALL=skip npm ci --omit=dev/)
  })
})

describe('the CPU image', () => {
  it('never installs the CUDA provider', () => {
    const { text, stages } = parsed.get('infra/container/Dockerfile')!
    expect(text).not.toMatch(/script\/install\.js|ONNXRUNTIME_NODE_INSTALL_CUDA/)
    expect(envOf(stages.find((s) => s.name === 'deps')!)).toMatchObject({ ONNXRUNTIME_NODE_INSTALL: 'skip' })
    expect(stages.at(-1)!.image).toMatch(/^node:24\.[0-9.]+-bookworm-slim@sha256:[0-9a-f]{64}$/)
  })
})

describe('the healthcheck script', () => {
  let server: Server
  let status = 200
  let port: number

  beforeAll(async () => {
    server = createServer((req, res) => {
      res.statusCode = req.url === READINESS_PATH ? status : 404
      res.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const probe = () =>
    run(process.execPath, ['--import', 'tsx', 'infra/container/healthcheck.ts'], { cwd: ROOT, env: { ...process.env, PORT: String(port), HOST: '0.0.0.0' } })
      .then(() => 0, (err: { code: number }) => err.code)

  it('exits 0 when the backend is ready and 1 when it answers 503', async () => {
    status = 200
    expect(await probe()).toBe(0)
    status = 503
    expect(await probe()).toBe(1)
  })

  it('asks the route the backend serves', async () => {
    const routes = await readFile(join(ROOT, 'backend/routes/health.ts'), 'utf8')
    expect(routes).toContain(`.get('${READINESS_PATH}'`)
  })
})

describe('.dockerignore', () => {
  it('keeps dependencies, build output, models, tests, git and local secrets out of the context, and the build inputs in', async () => {
    const lines = (await readFile(join(ROOT, '.dockerignore'), 'utf8')).split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
    expect(lines).toEqual(expect.arrayContaining(['node_modules', 'dist', 'models', 'test', '.git', '.dev.vars']))
    // npm ci resolves the `file:` devDependency from tools/openapi-client/package.json.
    expect(lines).not.toContain('tools')
    const { files } = await buildConfig()
    const roots = new Set(files.map((f) => f.split('/')[0]!))
    for (const root of [...roots, 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'shared', 'edge']) expect(lines).not.toContain(root)
  })
})
