import { pathToFileURL } from 'node:url'
import { fetchModelsFromEnv } from './repository/fetch.ts'

/**
 * The model fetch init step (Kubernetes init container, Lambda init):
 * `MODEL_SOURCE=s3://bucket/prefix MODEL_REPOSITORY=/models node dist/backend/fetch-models.js`.
 * Exits 0 only when every version of every model checks against its MANIFEST.
 */
const main = async (): Promise<void> => {
  const result = await fetchModelsFromEnv()
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: 'model repository fetched and verified', ...result })}\n`)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`model fetch refused: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}
