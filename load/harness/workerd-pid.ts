import { readFileSync, readdirSync } from 'node:fs'

/** Direct children of `pid` (Linux /proc, every thread's list). */
const childrenOf = (pid: number): number[] => {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number))
  } catch {
    return []
  }
}

const commOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
  } catch {
    return ''
  }
}

/** The workerd process Miniflare started under the host process, if it can be found. */
export const findWorkerdPid = (hostPid: number): number | undefined => {
  const queue = [hostPid]
  while (queue.length > 0) {
    const pid = queue.shift()!
    for (const child of childrenOf(pid)) {
      if (commOf(child).includes('workerd')) return child
      queue.push(child)
    }
  }
  return undefined
}
