/** Structured JSON logs, one object per line, on stdout. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export type LogFields = Record<string, unknown>

export interface Logger {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
}

export const createLogger = (level: LogLevel = 'info', write: (line: string) => void = (l) => process.stdout.write(l)): Logger => {
  const threshold = LOG_LEVELS.indexOf(level)
  const at = (lvl: Exclude<LogLevel, 'silent'>) =>
    LOG_LEVELS.indexOf(lvl) < threshold
      ? () => {}
      : (msg: string, fields: LogFields = {}) => {
          write(`${JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields })}\n`)
        }
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

/** Error fields safe to log (message and stack stay in logs, never in responses). */
export const errorFields = (err: unknown): LogFields =>
  err instanceof Error ? { error: err.message, stack: err.stack } : { error: String(err) }
