import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/**
 * What keeps the local stack a foreground process (Linux /proc): it notices when a process that
 * started it is gone, and names what already holds one of its ports.
 */

interface ProcessStat {
  pid: number
  ppid: number
  pgrp: number
  /** Clock ticks since boot: tells a pid reused by another process from the one it was. */
  startTime: string
}

/** /proc/<pid>/stat, or undefined when the process is gone. */
export const processStat = (pid: number): ProcessStat | undefined => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name is in parentheses and may hold spaces or parentheses itself.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { pid, ppid: Number(fields[1]), pgrp: Number(fields[2]), startTime: fields[19] }
  } catch {
    return undefined
  }
}

/**
 * The processes that started this one and share its process group (npm, sh, tsx: the job a
 * terminal runs), nearest first, at most `limit`.
 */
export const launchers = (limit = 4): ProcessStat[] => {
  const own = processStat(process.pid)
  const found: ProcessStat[] = []
  for (let stat = own && processStat(own.ppid); stat && stat.pid > 1 && stat.pgrp === own!.pgrp && found.length < limit; stat = processStat(stat.ppid)) found.push(stat)
  return found
}

/**
 * Calls `gone` once when any of `watched` has exited (or its pid now names another process).
 * A signal sent to npm or sh alone does not reach this process, and kill -9 of any of them
 * cannot be caught: watching them is what makes the stack stop with its launcher.
 */
export const whenLaunchersExit = (gone: () => void, { watched = launchers(), everyMs = 500 } = {}): (() => void) => {
  const timer = setInterval(() => {
    if (watched.some((p) => processStat(p.pid)?.startTime !== p.startTime)) {
      clearInterval(timer)
      gone()
    }
  }, everyMs)
  timer.unref()
  return () => clearInterval(timer)
}

/** A process's command line, its arguments joined by spaces; undefined when it is gone. */
export const commandLine = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ')
  } catch {
    return undefined
  }
}

/** The socket inodes listening on `port` (IPv4 and IPv6). */
const listeningInodes = (port: number): Set<string> => {
  const inodes = new Set<string>()
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = ''
    try {
      text = readFileSync(table, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/)
      // local_address is ADDR:PORT; state 0A is LISTEN; the inode is the tenth column.
      if (cols[1]?.endsWith(`:${hexPort}`) && cols[3] === '0A') inodes.add(cols[9])
    }
  }
  return inodes
}

export interface PortHolder {
  pid: number
  pgrp: number
  command: string
}

/** The process listening on `port`, when this user may see it. */
export const portHolder = (port: number): PortHolder | undefined => {
  const inodes = listeningInodes(port)
  if (inodes.size === 0) return undefined
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry)
    if (!Number.isInteger(pid)) continue
    let fds: string[]
    try {
      fds = readdirSync(`/proc/${pid}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      let target = ''
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`)
      } catch {
        continue
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1]
      if (inode === undefined || !inodes.has(inode)) continue
      return { pid, pgrp: processStat(pid)?.pgrp ?? pid, command: commandLine(pid) ?? '' }
    }
  }
  return undefined
}
