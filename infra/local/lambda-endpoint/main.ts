import { startLambdaEndpoint } from './server.ts'

/**
 * `tsx infra/local/lambda-endpoint/main.ts`: a local AWS Lambda Invoke endpoint that runs the
 * backend's Lambda handler (backend/lambda.ts) in this process.
 * Env: `LAMBDA_FUNCTION` (default `edge-infer-cpu`), `LAMBDA_ENDPOINT_PORT` (default 0 = a free
 * port), `MODEL_REPOSITORY` (default ./models, read by the handler). Logs JSON lines; the first
 * one, `{"msg":"listening","url":...}`, says where it listens. SIGINT/SIGTERM stop it.
 */
const log = (entry: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...entry })}\n`)
}

const main = async (): Promise<void> => {
  const functionName = process.env.LAMBDA_FUNCTION || 'edge-infer-cpu'
  const portText = process.env.LAMBDA_ENDPOINT_PORT ?? '0'
  const port = Number(portText)
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`LAMBDA_ENDPOINT_PORT ${JSON.stringify(portText)} is not a port`)

  const endpoint = await startLambdaEndpoint({ functionName, port })
  log({ level: 'info', msg: 'listening', url: endpoint.url, function: functionName })

  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    log({ level: 'info', msg: 'stopping', signal })
    endpoint.close().then(() => process.exit(0), () => process.exit(1))
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
}

main().catch((error: unknown) => {
  log({ level: 'error', msg: 'failed to start', error: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})
