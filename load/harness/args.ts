/** A command-line mistake: the command prints it with its usage and exits 2. */
export class UsageError extends Error {}

/** A positive number from option `name`, or undefined when the option was not given. */
export const positiveNumber = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined
  const value = Number(text)
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0) throw new UsageError(`--${name} must be a positive number, got ${JSON.stringify(text)}`)
  return value
}

/** A target base URL: http(s), no trailing slash. */
export const targetUrl = (text: string): string => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new UsageError(`--target must be a URL, got ${JSON.stringify(text)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--target must be http(s), got ${JSON.stringify(text)}`)
  return url.href.replace(/\/+$/, '')
}

/** Where to send the load: a given target with its key, or (neither given) a local stack started for the run. */
export type Target = { kind: 'remote'; url: string; apiKey: string } | { kind: 'local' }

export const parseTarget = (target: string | undefined, key: string | undefined): Target => {
  if (target === undefined) {
    if (key !== undefined) throw new UsageError('--key needs --target: the local stack makes its own key')
    return { kind: 'local' }
  }
  const apiKey = key ?? process.env.API_KEY
  if (!apiKey) throw new UsageError('--target needs --key (or API_KEY in the environment)')
  return { kind: 'remote', url: targetUrl(target), apiKey }
}
