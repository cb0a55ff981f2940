import { execFile } from 'node:child_process'
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile, chmod, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { promisify } from 'node:util'
import { App } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { DockerfileParser } from 'dockerfile-ast'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSettings, settingsSchema } from '../../../backend/settings.ts'
import { modelRepositoryProblems } from '../../../infra/aws/check-models.ts'
import { lambdaTierOptionsFromContext } from '../../../infra/aws/context.ts'
import { ALIAS_NAME, DOCKERFILE, IMAGE_MODEL_REPOSITORY, LAMBDA_TIER_DEFAULTS, LambdaTierStack, REPO_ROOT } from '../../../infra/aws/lambda-tier-stack.ts'

const run = promisify(execFile)
const scratch: string[] = []
const tempDir = async (prefix: string) => {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  scratch.push(dir)
  return dir
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
interface CfnResource { Type: string; Properties?: Record<string, Json>; DependsOn?: string[] }
interface CfnTemplate { Resources: Record<string, CfnResource>; Outputs?: Record<string, { Value: Json }> }
interface Statement { Effect: string; Action: Json; Resource: Json; Principal?: Json }

/** Synthesises the app as app.ts does, with `context` as `-c` would pass it (strings). */
const synth = async (context: Record<string, string> = {}) => {
  const app = new App({ outdir: await tempDir('edge-infer-cdk-'), context })
  const stack = new LambdaTierStack(app, 'EdgeInferLambdaTier', lambdaTierOptionsFromContext((key) => app.node.tryGetContext(key)))
  const template = Template.fromStack(stack)
  return { app, stack, template, json: template.toJSON() as CfnTemplate }
}

const ofType = (t: CfnTemplate, type: string) => Object.entries(t.Resources).filter(([, r]) => r.Type === type)

/** Every policy statement in the template: standalone and managed policies, and roles', users' and groups' inline ones. */
const allStatements = (t: CfnTemplate): Statement[] => {
  const docs: Array<{ Statement: Statement[] }> = []
  for (const [, r] of Object.entries(t.Resources)) {
    const p = r.Properties ?? {}
    if (r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy') docs.push(p.PolicyDocument as unknown as { Statement: Statement[] })
    if (['AWS::IAM::Role', 'AWS::IAM::User', 'AWS::IAM::Group'].includes(r.Type) && Array.isArray(p.Policies)) {
      for (const inline of p.Policies) docs.push((inline as unknown as { PolicyDocument: { Statement: Statement[] } }).PolicyDocument)
    }
  }
  return docs.flatMap((doc) => doc.Statement)
}

let base: Awaited<ReturnType<typeof synth>>

beforeAll(async () => {
  base = await synth()
})

afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })))
})

describe('LambdaTierStack template', () => {
  it('has one image function with the default memory, timeout and architecture, invoked through the alias', () => {
    const functions = ofType(base.json, 'AWS::Lambda::Function')
    expect(functions).toHaveLength(1)
    const [fnId, fn] = functions[0]!
    expect(fn.Properties).toMatchObject({
      PackageType: 'Image', MemorySize: 2048, Timeout: 30, Architectures: ['x86_64'],
      Code: { ImageUri: expect.anything() },
    })
    expect(LAMBDA_TIER_DEFAULTS).toMatchObject({ memoryMb: 2048, timeoutSeconds: 30 })
    // No Handler/Runtime: the image's CMD names the handler.
    expect(fn.Properties).not.toHaveProperty('Handler')
    expect(fn.Properties).not.toHaveProperty('Runtime')
    // Capped by default: a backend outage cannot spend the account's whole concurrency pool.
    expect(fn.Properties!.ReservedConcurrentExecutions).toBe(LAMBDA_TIER_DEFAULTS.reservedConcurrency)
    expect(LAMBDA_TIER_DEFAULTS.reservedConcurrency).toBeGreaterThan(0)
    expect(LAMBDA_TIER_DEFAULTS.reservedConcurrency).toBeLessThan(1000)
    const aliases = ofType(base.json, 'AWS::Lambda::Alias')
    expect(aliases).toHaveLength(1)
    expect(aliases[0]![1].Properties).toMatchObject({ Name: ALIAS_NAME, FunctionName: { Ref: fnId } })
    expect(aliases[0]![1].Properties).not.toHaveProperty('ProvisionedConcurrencyConfig')
  })

  it('sets only variables backend/settings.ts reads, with values it accepts', () => {
    const [, fn] = ofType(base.json, 'AWS::Lambda::Function')[0]!
    const variables = (fn.Properties!.Environment as { Variables: Record<string, string> }).Variables
    // ORT_DISABLE_TELEMETRY is onnxruntime's own switch (issue 31 §2); every other name is a setting.
    expect(variables).toEqual({ ORT_DISABLE_TELEMETRY: '1', MODEL_REPOSITORY: IMAGE_MODEL_REPOSITORY, LOG_LEVEL: 'info', MODEL_MEMORY_BUDGET_MB: '1536' })
    for (const name of Object.keys(variables).filter((n) => n !== 'ORT_DISABLE_TELEMETRY')) expect(Object.keys(settingsSchema.shape)).toContain(name)
    expect(readSettings(variables)).toMatchObject({ MODEL_REPOSITORY: IMAGE_MODEL_REPOSITORY, LOG_LEVEL: 'info', MODEL_MEMORY_BUDGET_MB: 1536 })
  })

  it('logs to its own log group with a retention period', () => {
    const groups = ofType(base.json, 'AWS::Logs::LogGroup')
    expect(groups).toHaveLength(1)
    const [groupId, group] = groups[0]!
    expect(group.Properties).toMatchObject({ RetentionInDays: 30 })
    base.template.hasResourceProperties('AWS::Lambda::Function', { LoggingConfig: { LogGroup: { Ref: groupId } } })
  })

  it('lets the edge user do one thing: lambda:InvokeFunction on the alias', () => {
    const users = ofType(base.json, 'AWS::IAM::User')
    expect(users).toHaveLength(1)
    const [userId, user] = users[0]!
    // No managed policies, groups, inline policies or login profile on the user itself.
    expect(user.Properties ?? {}).toEqual({})
    const [aliasId] = ofType(base.json, 'AWS::Lambda::Alias')[0]!
    const attached = Object.values(base.json.Resources).filter((r) =>
      r.Type.startsWith('AWS::IAM::') && JSON.stringify(r.Properties?.Users ?? []).includes(JSON.stringify({ Ref: userId })))
    expect(attached).toHaveLength(1)
    expect(attached[0]!.Properties!.PolicyDocument).toEqual({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: { Ref: aliasId } }],
    })
  })

  it('has no wildcard in any policy action or resource; the execution role only writes its own log group', () => {
    const statements = allStatements(base.json)
    expect(statements.length).toBeGreaterThanOrEqual(2)
    for (const s of statements) {
      expect(JSON.stringify(s.Action)).not.toContain('*')
      expect(JSON.stringify(s.Resource)).not.toContain('*')
      expect(s).not.toHaveProperty('NotAction')
      expect(s).not.toHaveProperty('NotResource')
    }
    const [roleId, role] = ofType(base.json, 'AWS::IAM::Role')[0]!
    expect(role.Properties).not.toHaveProperty('ManagedPolicyArns')
    expect(ofType(base.json, 'AWS::IAM::ManagedPolicy')).toHaveLength(0)
    const [groupId] = ofType(base.json, 'AWS::Logs::LogGroup')[0]!
    base.template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: roleId }],
      PolicyDocument: { Statement: [{ Effect: 'Allow', Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Resource: { 'Fn::GetAtt': [groupId, 'Arn'] } }] },
    })
  })

  it('holds no credentials: no access key or secret, and outputs the name, region and user for the wrangler secrets', () => {
    for (const type of ['AWS::IAM::AccessKey', 'AWS::SecretsManager::Secret', 'AWS::IAM::LoginProfile']) expect(ofType(base.json, type)).toHaveLength(0)
    const [fnId] = ofType(base.json, 'AWS::Lambda::Function')[0]!
    const [userId] = ofType(base.json, 'AWS::IAM::User')[0]!
    expect(base.json.Outputs).toEqual({
      LambdaFunction: expect.objectContaining({ Value: { 'Fn::Join': ['', [{ Ref: fnId }, `:${ALIAS_NAME}`]] } }),
      LambdaRegion: expect.objectContaining({ Value: { Ref: 'AWS::Region' } }),
      EdgeUserName: expect.objectContaining({ Value: { Ref: userId } }),
    })
    expect(JSON.stringify(base.json)).not.toMatch(/SecretAccessKey/i)
  })

  it('takes memory, timeout, retention, provisioned and reserved concurrency from the context', async () => {
    const { json, template } = await synth({
      memoryMb: '3008', timeoutSeconds: '12', logRetentionDays: '7', logLevel: 'warn', provisionedConcurrency: '2', reservedConcurrency: '20',
    })
    template.hasResourceProperties('AWS::Lambda::Function', {
      MemorySize: 3008, Timeout: 12, ReservedConcurrentExecutions: 20,
      Environment: { Variables: { LOG_LEVEL: 'warn', MODEL_MEMORY_BUDGET_MB: '2496' } },
    })
    template.hasResourceProperties('AWS::Lambda::Alias', { Name: ALIAS_NAME, ProvisionedConcurrencyConfig: { ProvisionedConcurrentExecutions: 2 } })
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 7 })
    // The invoke grant stays on the alias, which provisioned concurrency serves.
    const [aliasId] = ofType(json, 'AWS::Lambda::Alias')[0]!
    template.hasResourceProperties('AWS::IAM::Policy', { PolicyDocument: { Statement: [{ Action: 'lambda:InvokeFunction', Resource: { Ref: aliasId } }] } })
  })

  it('alarms on errors and throttles of the alias the edge invokes, quiet while nothing is invoked', () => {
    const alarms = ofType(base.json, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties!)
    expect(alarms.map((a) => a.MetricName).sort()).toEqual(['Errors', 'Throttles'])
    const [fnId] = ofType(base.json, 'AWS::Lambda::Function')[0]!
    const [aliasId] = ofType(base.json, 'AWS::Lambda::Alias')[0]!
    for (const a of alarms) {
      expect(a).toMatchObject({
        Namespace: 'AWS/Lambda', Statistic: 'Sum', Period: 300, Threshold: 1, EvaluationPeriods: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching',
      })
      // The alias's own series (FunctionName plus Resource function:alias), not the function's across versions.
      const dims = a.Dimensions as Array<{ Name: string; Value: Json }>
      expect(dims.map((d) => d.Name).sort()).toEqual(['FunctionName', 'Resource'])
      expect(JSON.stringify(dims)).toContain(fnId)
      expect(JSON.stringify(dims)).toContain(ALIAS_NAME)
    }
    expect(aliasId).toBeTruthy()
  })

  it('merges drift through Redis and exports over OTLP when the context names them: URLs in the environment, secrets as dynamic references, no new permission', async () => {
    const { json, template } = await synth({
      redisUrl: 'https://eu1-merry-cat-12345.upstash.io', redisTokenSecret: 'edge-infer/upstash-token',
      otlpEndpoint: 'https://otlp.example.net', otlpHeadersSecret: 'edge-infer/otlp-headers',
    })
    const [, fn] = ofType(json, 'AWS::Lambda::Function')[0]!
    const variables = (fn.Properties!.Environment as { Variables: Record<string, string> }).Variables
    expect(variables).toMatchObject({
      UPSTASH_REDIS_REST_URL: 'https://eu1-merry-cat-12345.upstash.io',
      UPSTASH_REDIS_REST_TOKEN: '{{resolve:secretsmanager:edge-infer/upstash-token:SecretString:::}}',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.net',
      OTEL_EXPORTER_OTLP_HEADERS: '{{resolve:secretsmanager:edge-infer/otlp-headers:SecretString:::}}',
      OTEL_SERVICE_NAME: 'edge-infer-lambda',
    })
    // The settings accept what the secret resolves to; the OTel SDK reads its own variables.
    expect(readSettings({ ...variables, UPSTASH_REDIS_REST_TOKEN: 'resolved-token' })).toMatchObject({ UPSTASH_REDIS_REST_URL: 'https://eu1-merry-cat-12345.upstash.io', DRIFT_MONITORING: 'on' })
    template.resourceCountIs('AWS::SecretsManager::Secret', 0)
    expect(allStatements(json)).toEqual(allStatements(base.json))
    // Off by default, as on the server: no Redis, no collector.
    const [, plain] = ofType(base.json, 'AWS::Lambda::Function')[0]!
    expect(Object.keys((plain.Properties!.Environment as { Variables: Record<string, string> }).Variables).filter((n) => /^(UPSTASH|OTEL)_/.test(n))).toEqual([])
  })

  it('refuses half a Redis configuration and OTLP headers without an endpoint', () => {
    const read = (context: Record<string, string>) => () => lambdaTierOptionsFromContext((key) => context[key])
    expect(read({ redisUrl: 'https://r.upstash.io' })).toThrow(/redisTokenSecret: set both redisUrl and redisTokenSecret/)
    expect(read({ redisTokenSecret: 'edge-infer/upstash-token' })).toThrow(/redisTokenSecret/)
    expect(read({ redisUrl: 'not a url', redisTokenSecret: 's' })).toThrow(/redisUrl/)
    expect(read({ otlpHeadersSecret: 'edge-infer/otlp-headers' })).toThrow(/otlpHeadersSecret needs otlpEndpoint/)
    expect(read({ otlpEndpoint: 'https://otlp.example.net' })()).toEqual({ otlp: { endpoint: 'https://otlp.example.net' } })
  })

  it('refuses provisioned concurrency above the reserved cap', () => {
    expect(() => new LambdaTierStack(new App(), 'Over', { provisionedConcurrency: 5, reservedConcurrency: 2 })).toThrow(/exceeds reservedConcurrency/)
  })

  it('refuses context values Lambda or CloudWatch would refuse', () => {
    const read = (context: Record<string, string>) => () => lambdaTierOptionsFromContext((key) => context[key])
    expect(read({ memoryMb: '64' })).toThrow(/memoryMb/)
    expect(read({ timeoutSeconds: '901' })).toThrow(/timeoutSeconds/)
    expect(read({ logRetentionDays: '31' })).toThrow(/logRetentionDays: not a CloudWatch Logs retention period/)
    expect(read({ logLevel: 'verbose' })).toThrow(/logLevel/)
    expect(read({ provisionedConcurrency: 'two' })).toThrow(/provisionedConcurrency/)
    expect(read({})()).toEqual({})
    const app = new App()
    expect(() => new LambdaTierStack(app, 'Small', { memoryMb: 512 })).toThrow(/leaves under 128 MB/)
  })
})

describe('image asset', () => {
  const stagedAsset = async () => {
    const assembly = base.app.synth()
    const manifest = JSON.parse(await readFile(join(assembly.directory, 'EdgeInferLambdaTier.assets.json'), 'utf8')) as {
      dockerImages: Record<string, { source: { directory: string; dockerFile: string; platform: string } }>
    }
    const images = Object.values(manifest.dockerImages)
    expect(images).toHaveLength(1)
    return { source: images[0]!.source, dir: join(assembly.directory, images[0]!.source.directory) }
  }

  const filesUnder = async (dir: string): Promise<string[]> => {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true })
    return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name)))
  }

  it('is staged from the repository root with the Lambda Dockerfile, for linux/amd64', async () => {
    const { source } = await stagedAsset()
    expect(source).toEqual({ directory: expect.stringMatching(/^asset\./), dockerFile: DOCKERFILE, platform: 'linux/amd64' })
  })

  it('holds every input of npm run build and the models, and nothing heavy or secret', async () => {
    const { dir } = await stagedAsset()
    const staged = new Set(await filesUnder(dir))
    const { stdout } = await run(process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--listFilesOnly'], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 })
    const inputs = stdout.split('\n').map((l) => l.trim()).filter((l) => l && !l.includes('/node_modules/')).map((l) => relative(REPO_ROOT, l))
    expect(inputs).toContain('backend/lambda.ts')
    const buildConfigs = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'tools/openapi-client/package.json', DOCKERFILE, 'infra/aws/check-models.ts']
    const models = (await filesUnder(join(REPO_ROOT, 'models'))).map((f) => join('models', f))
    expect(models.length).toBeGreaterThan(0)
    expect([...inputs, ...buildConfigs, ...models].filter((f) => !staged.has(f))).toEqual([])
    expect([...staged].filter((f) => /(^|\/)(node_modules|dist|\.git|cdk\.out)\//.test(f) || /(^|\/)\.dev\.vars$/.test(f))).toEqual([])
  })

  it('is staged without Docker: `cdk synth` from cdk.json runs offline, no docker, in bounded time', async () => {
    const out = await tempDir('edge-infer-cdk-out-')
    const bin = await tempDir('edge-infer-fake-docker-')
    const calls = join(bin, 'calls')
    // A docker that records being called and fails: synth must never reach it.
    await writeFile(join(bin, 'docker'), `#!/bin/sh\necho "$@" >> '${calls}'\nexit 1\n`)
    await chmod(join(bin, 'docker'), 0o755)
    const started = Date.now()
    const { stderr } = await run(process.execPath, [join(REPO_ROOT, 'node_modules/aws-cdk/bin/cdk'), 'synth', '-o', out, '--no-notices', '--no-version-reporting', '-q'], {
      cwd: join(REPO_ROOT, 'infra/aws'),
      env: {
        ...process.env,
        // This Node first on PATH, for npx and tsx that cdk.json's app command starts.
        PATH: [bin, dirname(process.execPath), process.env.PATH].join(':'),
        CDK_DOCKER: join(bin, 'docker'),
        CDK_DISABLE_VERSION_CHECK: '1',
        CDK_DISABLE_CLI_TELEMETRY: 'true',
        // Any network call fails fast against a closed port.
        HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9', https_proxy: 'http://127.0.0.1:9', http_proxy: 'http://127.0.0.1:9',
        AWS_EC2_METADATA_DISABLED: 'true',
      },
      timeout: 50_000,
      maxBuffer: 16 * 1024 * 1024,
    })
    expect(Date.now() - started).toBeLessThan(50_000)
    expect(await stat(calls).then(() => 'docker was called', () => 'not called')).toBe('not called')
    const template = JSON.parse(await readFile(join(out, 'EdgeInferLambdaTier.template.json'), 'utf8')) as CfnTemplate
    expect(ofType(template, 'AWS::Lambda::Function')[0]![1].Properties).toMatchObject({ PackageType: 'Image' })
    expect(stderr).not.toMatch(/error/i)
  }, 60_000)
})

describe('Dockerfile.lambda', () => {
  const parse = async () => DockerfileParser.parse(await readFile(join(REPO_ROOT, DOCKERFILE), 'utf8'))

  it('builds every stage on the AWS Lambda Node.js 24 base image', async () => {
    const dockerfile = await parse()
    const args = dockerfile.getInitialARGs().map((a) => [a.getProperty()?.getName(), a.getProperty()?.getValue()])
    expect(args).toEqual([['LAMBDA_NODE_IMAGE', expect.stringMatching(/^public\.ecr\.aws\/lambda\/nodejs:24@sha256:[0-9a-f]{64}$/)]])
    const froms = dockerfile.getFROMs()
    expect(froms.map((f) => f.getImage())).toEqual(['${LAMBDA_NODE_IMAGE}', '${LAMBDA_NODE_IMAGE}', '${LAMBDA_NODE_IMAGE}'])
    expect(froms.map((f) => f.getBuildStage())).toEqual(['builder', 'prod-deps', null])
  })

  it('names an exported handler of backend/lambda.ts, compiled by the build, in the final CMD', async () => {
    const dockerfile = await parse()
    const cmds = dockerfile.getCMDs()
    expect(cmds).toHaveLength(1)
    const strings = cmds[0]!.getJSONStrings().map((s) => s.getJSONValue())
    expect(strings).toHaveLength(1)
    const [file, exported] = [strings[0]!.slice(0, strings[0]!.lastIndexOf('.')), strings[0]!.slice(strings[0]!.lastIndexOf('.') + 1)]
    expect(file).toBe('dist/backend/lambda')
    const source = file.replace(/^dist\//, '')
    const build = JSON.parse((await readFile(join(REPO_ROOT, 'tsconfig.build.json'), 'utf8')).replace(/^\s*\/\/.*$/gm, '')) as { files: string[]; compilerOptions: { outDir: string } }
    expect(build.compilerOptions.outDir).toBe('dist')
    expect(build.files).toContain(`${source}.ts`)
    const handlerModule = (await import(join(REPO_ROOT, `${source}.ts`))) as Record<string, unknown>
    expect(typeof handlerModule[exported]).toBe('function')
  })

  it('builds with dev dependencies, checks the models, and ships production dependencies, dist/ and models/', async () => {
    const dockerfile = await parse()
    const instructions = dockerfile.getInstructions().map((i) => i.getTextContent().replace(/\\\n/g, ' ').replace(/\s+/g, ' '))
    const stageOf = (needle: string) => {
      const at = instructions.findIndex((i) => i.includes(needle))
      expect(at, needle).toBeGreaterThanOrEqual(0)
      return instructions.slice(0, at + 1).filter((i) => i.startsWith('FROM ')).length
    }
    expect(stageOf('npm ci --ignore-scripts')).toBe(1)
    expect(stageOf('npm run build && node_modules/.bin/tsx infra/aws/check-models.ts models')).toBe(1)
    expect(stageOf('npm ci --omit=dev')).toBe(2)
    const final = instructions.slice(instructions.findLastIndex((i) => i.startsWith('FROM ')))
    expect(final).toEqual(expect.arrayContaining([
      'COPY --from=prod-deps /deps/node_modules ${LAMBDA_TASK_ROOT}/node_modules',
      'COPY --from=builder /build/dist ${LAMBDA_TASK_ROOT}/dist',
      'COPY --from=builder /build/models ${LAMBDA_TASK_ROOT}/models',
      'COPY package.json ${LAMBDA_TASK_ROOT}/',
    ]))
    // The runtime installs nothing and keeps the base's non-root Lambda user.
    expect(final.filter((i) => i.startsWith('RUN ') || i.startsWith('USER '))).toEqual([])
    expect(final.join('\n')).toContain(`MODEL_REPOSITORY=${IMAGE_MODEL_REPOSITORY}`)
  })
})

describe('check-models (the image build refuses a bad model repository)', () => {
  const copyModels = async () => {
    const dir = await tempDir('edge-infer-models-')
    await cp(join(REPO_ROOT, 'models'), dir, { recursive: true })
    return dir
  }

  it('accepts the bundled models', async () => {
    expect(await modelRepositoryProblems(join(REPO_ROOT, 'models'))).toEqual([])
  })

  it('names each version whose files do not match its MANIFEST, selected or not', async () => {
    const dir = await copyModels()
    await writeFile(join(dir, 'credit-risk/1/model.onnx'), 'not the model')
    await rm(join(dir, 'credit-risk/2/MANIFEST'))
    expect(await modelRepositoryProblems(dir)).toEqual([
      expect.stringMatching(/^credit-risk\/1: model\.onnx sha256 [0-9a-f]{64} does not match MANIFEST/),
      'credit-risk/2: MANIFEST is missing',
    ])
  })

  it('refuses an empty repository and a model without versions, and exits 1 as a command', async () => {
    const empty = await tempDir('edge-infer-models-empty-')
    expect(await modelRepositoryProblems(empty)).toEqual([`${empty}: no models (no <model>/config.json)`])
    const dir = await copyModels()
    await rm(join(dir, 'credit-risk/1'), { recursive: true })
    await rm(join(dir, 'credit-risk/2'), { recursive: true })
    await mkdir(join(dir, 'credit-risk/notes'))
    expect(await modelRepositoryProblems(dir)).toEqual(['credit-risk: no version folders'])
    const failed = await run(process.execPath, [join(REPO_ROOT, 'node_modules/tsx/dist/cli.mjs'), 'infra/aws/check-models.ts', dir], { cwd: REPO_ROOT }).then(() => 0, (err: { code: number; stderr: string }) => {
      expect(err.stderr).toContain('credit-risk: no version folders')
      return err.code
    })
    expect(failed).toBe(1)
  })
})
