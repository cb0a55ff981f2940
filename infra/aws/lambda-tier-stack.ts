import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Aws, CfnOutput, Duration, IgnoreMode, RemovalPolicy, SecretValue, Stack, type StackProps } from 'aws-cdk-lib'
import { Platform } from 'aws-cdk-lib/aws-ecr-assets'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import * as logs from 'aws-cdk-lib/aws-logs'
import type { Construct } from 'constructs'
import type { LogLevel } from '../../backend/logger.ts'
import type { Settings } from '../../backend/settings.ts'

/** The repository root: the image's build context (the Dockerfile builds `dist/` from the sources). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const DOCKERFILE = 'infra/aws/Dockerfile.lambda'
/** Where the image bakes the model repository (LAMBDA_TASK_ROOT of the Lambda base image). */
export const IMAGE_MODEL_REPOSITORY = '/var/task/models'
/** The edge invokes this alias, never $LATEST, so provisioned concurrency (on the alias) serves it. */
export const ALIAS_NAME = 'live'

/** The image's build context: only what the Dockerfile copies (the list docker build reads too). */
export const DOCKERIGNORE = `${DOCKERFILE}.dockerignore`

/** The patterns of DOCKERIGNORE; CDK's staging applies them after any root .dockerignore, so they decide. */
export const assetExcludes = (root = REPO_ROOT): string[] =>
  readFileSync(join(root, DOCKERIGNORE), 'utf8').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))

/**
 * Sized from a measured cold start of the built handler (docs/deploy.md, "Lambda CPU tier"). Memory is not
 * the constraint, CPU is: Lambda gives one vCPU at 1,769 MB and proportionally less below, and the
 * fallback gets only what is left of the edge's deadline once the HTTP tier has used its share.
 */
export const LAMBDA_TIER_DEFAULTS = {
  memoryMb: 2048,
  /** A cold start plus any one request finishes in ~1 s; the timeout only ends invocations that hang. */
  timeoutSeconds: 30,
  logRetentionDays: logs.RetentionDays.ONE_MONTH,
  logLevel: 'info',
  /** 0: no provisioned concurrency (cold starts are paid on the fallback path only). */
  provisionedConcurrency: 0,
  /**
   * A cap, so a backend outage that sends every request here cannot take the account's shared
   * concurrency pool (1,000 by default) from its other functions. A warm instance answers in about a
   * millisecond, so 100 instances carry far more than the fallback is meant for.
   */
  reservedConcurrency: 100,
} as const satisfies Partial<LambdaTierOptions>

/** Left outside the model memory budget: Node, onnxruntime and tensors (133 MB measured in all, with two small models). */
export const NON_MODEL_HEADROOM_MB = 512

export interface LambdaTierOptions {
  memoryMb: number
  timeoutSeconds: number
  logRetentionDays: logs.RetentionDays
  logLevel: LogLevel
  /** Instances kept initialised on the alias; 0 turns it off. */
  provisionedConcurrency: number
  /** Caps concurrent instances (and so cost and the account's shared pool); 0 stops every invoke. */
  reservedConcurrency: number
  /**
   * The Upstash Redis the backend replicas merge drift counts in: with it the tier's rows count in
   * the same reports (and canary decisions). The token is read from a Secrets Manager secret at
   * deploy (a dynamic reference), never written into the template.
   */
  redis?: { url: string; tokenSecret: string }
  /** The OTLP/HTTP collector the tier pushes its spans and metrics to (nothing scrapes a Lambda); headers from a secret, as the token. */
  otlp?: { endpoint: string; headersSecret?: string }
}

export interface LambdaTierStackProps extends StackProps, Partial<LambdaTierOptions> {
  /** Tests replace the image build context; deploys use the repository root. */
  code?: lambda.DockerImageCode
}

/** The function environment: only names backend/settings.ts reads, so a typo fails the type check. */
export type LambdaEnvironment = Partial<Record<keyof Settings, string>>

/** The OpenTelemetry SDK's own variables (not settings.ts's), as the tier sets them. */
export type OtelEnvironment = Partial<Record<'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_HEADERS' | 'OTEL_SERVICE_NAME', string>>

/** The service name of the tier's spans and metrics: its series and spans are told from the server's by it. */
export const LAMBDA_SERVICE_NAME = 'edge-infer-lambda'

/** A Secrets Manager secret's string, resolved by CloudFormation at deploy: the template holds only its name. */
const secretString = (secret: string): string => SecretValue.secretsManager(secret).unsafeUnwrap()

/** Drift merging and OTLP export, each off unless configured (as on the server). */
export const telemetryEnvironment = ({ redis, otlp }: Pick<LambdaTierOptions, 'redis' | 'otlp'>): LambdaEnvironment & OtelEnvironment => ({
  ...(redis ? { UPSTASH_REDIS_REST_URL: redis.url, UPSTASH_REDIS_REST_TOKEN: secretString(redis.tokenSecret) } : {}),
  ...(otlp ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_SERVICE_NAME: LAMBDA_SERVICE_NAME } : {}),
  ...(otlp?.headersSecret ? { OTEL_EXPORTER_OTLP_HEADERS: secretString(otlp.headersSecret) } : {}),
})

/** The image's code asset: staged at synth (a directory copy), built by Docker only at deploy. */
export const imageCode = (root = REPO_ROOT): lambda.DockerImageCode =>
  lambda.DockerImageCode.fromImageAsset(root, {
    file: DOCKERFILE,
    exclude: assetExcludes(root),
    ignoreMode: IgnoreMode.DOCKER,
    // Matches `architecture` below: an ARM laptop must still build an x86-64 image.
    platform: Platform.LINUX_AMD64,
  })

/**
 * The CPU fallback tier: backend/lambda.ts `handler` in a container image (onnxruntime-node alone
 * is over the 250 MB zip limit), models baked in, behind an alias the edge's IAM user may invoke
 * and nothing else.
 */
export class LambdaTierStack extends Stack {
  readonly fn: lambda.DockerImageFunction
  readonly alias: lambda.Alias
  readonly edgeUser: iam.User
  readonly errorsAlarm: cloudwatch.Alarm
  readonly throttlesAlarm: cloudwatch.Alarm

  constructor(scope: Construct, id: string, props: LambdaTierStackProps = {}) {
    super(scope, id, props)
    const options: LambdaTierOptions = {
      memoryMb: props.memoryMb ?? LAMBDA_TIER_DEFAULTS.memoryMb,
      timeoutSeconds: props.timeoutSeconds ?? LAMBDA_TIER_DEFAULTS.timeoutSeconds,
      logRetentionDays: props.logRetentionDays ?? LAMBDA_TIER_DEFAULTS.logRetentionDays,
      logLevel: props.logLevel ?? LAMBDA_TIER_DEFAULTS.logLevel,
      provisionedConcurrency: props.provisionedConcurrency ?? LAMBDA_TIER_DEFAULTS.provisionedConcurrency,
      reservedConcurrency: props.reservedConcurrency ?? LAMBDA_TIER_DEFAULTS.reservedConcurrency,
      ...(props.redis ? { redis: props.redis } : {}),
      ...(props.otlp ? { otlp: props.otlp } : {}),
    }
    if (options.provisionedConcurrency > options.reservedConcurrency) {
      throw new Error(`provisionedConcurrency ${options.provisionedConcurrency} exceeds reservedConcurrency ${options.reservedConcurrency}`)
    }
    if (options.memoryMb - NON_MODEL_HEADROOM_MB < 128) {
      throw new Error(`memoryMb ${options.memoryMb} leaves under 128 MB for models after ${NON_MODEL_HEADROOM_MB} MB of headroom`)
    }

    const logGroup = new logs.LogGroup(this, 'Logs', {
      retention: options.logRetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    })
    // Its own role rather than AWSLambdaBasicExecutionRole, whose log rights cover every log group.
    const role = new iam.Role(this, 'ExecutionRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'edge-infer Lambda tier: writes its own log group, nothing else',
    })
    logGroup.grantWrite(role)

    // ORT_DISABLE_TELEMETRY is read by onnxruntime itself, not settings.ts: without it 1.30 starts
    // Microsoft's telemetry client on Linux (issue 31 §2).
    const environment: LambdaEnvironment & OtelEnvironment & { ORT_DISABLE_TELEMETRY: '1' } = {
      ORT_DISABLE_TELEMETRY: '1',
      MODEL_REPOSITORY: IMAGE_MODEL_REPOSITORY,
      LOG_LEVEL: options.logLevel,
      MODEL_MEMORY_BUDGET_MB: String(options.memoryMb - NON_MODEL_HEADROOM_MB),
      // Redis and the collector are reached over HTTPS from outside any VPC: no permission to grant.
      ...telemetryEnvironment(options),
    }
    this.fn = new lambda.DockerImageFunction(this, 'Function', {
      code: props.code ?? imageCode(),
      architecture: lambda.Architecture.X86_64,
      memorySize: options.memoryMb,
      timeout: Duration.seconds(options.timeoutSeconds),
      role,
      logGroup,
      environment,
      reservedConcurrentExecutions: options.reservedConcurrency,
      description: 'edge-infer CPU fallback tier (backend/lambda.ts handler)',
    })

    this.alias = new lambda.Alias(this, 'Alias', {
      aliasName: ALIAS_NAME,
      version: this.fn.currentVersion,
      ...(options.provisionedConcurrency > 0 ? { provisionedConcurrentExecutions: options.provisionedConcurrency } : {}),
    })

    // On the alias, the only thing the edge invokes. No action: the operator wires them to a topic (docs/deploy.md).
    const alarm = (id: string, metric: cloudwatch.Metric, description: string) =>
      new cloudwatch.Alarm(this, id, {
        metric,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // No invocations is the normal state of a fallback tier.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      })
    // Refusals (bad input, unknown model) are results, not errors: an error is a crash or a timeout.
    this.errorsAlarm = alarm('ErrorsAlarm', this.alias.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }), 'edge-infer Lambda tier: invocations failed (crash, timeout, init error) in 5 min')
    this.throttlesAlarm = alarm('ThrottlesAlarm', this.alias.metricThrottles({ period: Duration.minutes(5), statistic: 'Sum' }), 'edge-infer Lambda tier: invocations throttled at the reserved concurrency cap in 5 min')

    // The edge's identity. Workers have no AWS role to assume, so it is a user; its access key is
    // made by the operator with the CLI (see docs/deploy.md) so the secret never enters CloudFormation.
    this.edgeUser = new iam.User(this, 'EdgeInvoker')
    new iam.Policy(this, 'EdgeInvokePolicy', {
      users: [this.edgeUser],
      statements: [new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [this.alias.functionArn] })],
    })

    new CfnOutput(this, 'LambdaFunction', { value: `${this.fn.functionName}:${ALIAS_NAME}`, description: 'wrangler secret LAMBDA_FUNCTION' })
    new CfnOutput(this, 'LambdaRegion', { value: Aws.REGION, description: 'wrangler secret LAMBDA_REGION' })
    new CfnOutput(this, 'EdgeUserName', { value: this.edgeUser.userName, description: 'aws iam create-access-key --user-name <this>' })
  }
}

