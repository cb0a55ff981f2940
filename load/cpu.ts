import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

// Clock ticks per second for /proc times (100 on most Linux builds; asked once).
const ticksPerSecond = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/**
 * CPU time a process has used so far, all threads, in microseconds (Linux /proc). On a shared
 * machine wall-clock throughput moves with the neighbours; CPU per request does not.
 */
export const processCpuMicros = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the parenthesised command name; utime and stime are the 14th and 15th overall.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1e6
}
