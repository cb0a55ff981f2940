/**
 * The edge worker's one environment definition: Cloudflare bindings (vars and secrets from
 * wrangler.toml) and the per-request variables middlewares hand to each other.
 */
export interface Bindings {
  /** Base URL of the inference backend, e.g. http://127.0.0.1:8000. */
  BACKEND_URL: string
  /** Comma-separated origins allowed by CORS; empty allows none. */
  ALLOWED_ORIGINS?: string
  /** Request body limit in bytes (default 262144). */
  MAX_BODY_BYTES?: string
  /** Most instances one predict request may carry (default 64). */
  MAX_INSTANCES?: string
  /** Secret: JSON array of API key entries (hashes only). */
  API_KEYS?: string
}

/** An authenticated caller, as the auth middleware resolved it (never the key itself). */
export interface Caller {
  name: string
  scopes: string[]
  /** Requests per minute this key may make. */
  rateLimitPerMinute: number
}

export interface Variables {
  requestId: string
  caller: Caller
}

export interface AppEnv {
  Bindings: Bindings
  Variables: Variables
}
