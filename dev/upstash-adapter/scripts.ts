import { createHash } from 'node:crypto'
import type { RespArg } from './resp.ts'

/**
 * Upstash accepts Lua shebang flags that open-source Redis 7.0 (Debian's) refuses, e.g.
 * `#!lua flags=allow-key-locking`, which @upstash/ratelimit puts on every script. The adapter
 * removes them before Redis sees the script and remembers which SHA the client will ask for,
 * so EVALSHA with the client's hash finds the script Redis actually stored.
 */
const UPSTASH_ONLY_FLAGS = new Set(['allow-key-locking'])

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex')

const stripFlags = (script: string): string => {
  const match = /^#!lua([^\n]*)\n/.exec(script)
  if (!match) return script
  const rest = match[1].replace(/flags=([^\s]*)/, (_all, list: string) => {
    const kept = list.split(',').filter((f) => f !== '' && !UPSTASH_ONLY_FLAGS.has(f))
    return kept.length > 0 ? `flags=${kept.join(',')}` : ''
  })
  return `#!lua${rest.trimEnd()}\n${script.slice(match[0].length)}`
}

export class ScriptTranslator {
  /** Client-side SHA of a script as sent → SHA of the script Redis stored. */
  private readonly shas = new Map<string, string>()

  /** The command as Redis 7.0 will accept it. */
  translate(command: readonly RespArg[]): RespArg[] {
    const name = String(command[0] ?? '').toUpperCase()
    if ((name === 'EVAL' || name === 'EVAL_RO') && command.length > 1) {
      const script = String(command[1])
      const stripped = stripFlags(script)
      if (stripped === script) return [...command]
      this.shas.set(sha1(script), sha1(stripped))
      return [command[0], stripped, ...command.slice(2)]
    }
    if ((name === 'EVALSHA' || name === 'EVALSHA_RO') && command.length > 1) {
      const stored = this.shas.get(String(command[1]).toLowerCase())
      return stored ? [command[0], stored, ...command.slice(2)] : [...command]
    }
    return [...command]
  }
}
