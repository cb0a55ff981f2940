import { pathToFileURL } from 'node:url'
import { settingsSchema } from '../../backend/settings.ts'

/** The readiness route the backend serves (backend/routes/health.ts). */
export const READINESS_PATH = '/v2/health/ready'

/** Where this container's backend answers: its PORT, and loopback when it listens on every address. */
export const readinessUrl = (env: NodeJS.ProcessEnv): string => {
  const port = settingsSchema.shape.PORT.parse(env.PORT || undefined)
  const host = env.HOST && !['0.0.0.0', '::'].includes(env.HOST) ? env.HOST : '127.0.0.1'
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}${READINESS_PATH}`
}

/**
 * The image's HEALTHCHECK: exit 0 when the backend in this container answers ready. A script run
 * by `node`, not curl in a shell, so the image needs neither at run time.
 */
const main = async (): Promise<void> => {
  try {
    // Docker's own --timeout also applies; this keeps a hung socket from outliving it.
    const res = await fetch(readinessUrl(process.env), { signal: AbortSignal.timeout(2_000) })
    process.exit(res.status === 200 ? 0 : 1)
  } catch {
    process.exit(1)
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) void main()
