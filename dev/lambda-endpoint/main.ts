import { logLine, portFromEnv, runServerProcess } from '../server-process.ts'
import { startLambdaEndpoint } from './server.ts'

/**
 * `tsx dev/lambda-endpoint/main.ts`: a local AWS Lambda Invoke endpoint that runs the
 * backend's Lambda handler (backend/lambda.ts) in this process.
 * Env: `LAMBDA_FUNCTION` (default `edge-infer-cpu`), `LAMBDA_ENDPOINT_PORT` (default 0 = a free
 * port), `MODEL_REPOSITORY` (default ./models, read by the handler). Logs JSON lines; the first
 * one, `{"msg":"listening","url":...}`, says where it listens. SIGINT/SIGTERM stop it.
 */
runServerProcess(async () => {
  const functionName = process.env.LAMBDA_FUNCTION || 'edge-infer-cpu'
  const endpoint = await startLambdaEndpoint({ functionName, port: portFromEnv('LAMBDA_ENDPOINT_PORT') })
  logLine({ level: 'info', msg: 'listening', url: endpoint.url, function: functionName })
  return () => endpoint.close()
})
