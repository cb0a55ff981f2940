import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'

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

/** The machine's CPU time so far, busy and total, in clock ticks over all cores (the `cpu` line of /proc/stat). */
export const machineCpuTicks = (): { busy: number; total: number } => {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]
  // user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number)
  const idleTicks = idle + (iowait || 0)
  const busy = user + nice + system + (irq || 0) + (softirq || 0) + (steal || 0)
  return { busy, total: busy + idleTicks }
}

/** The machine's load average, 1/5/15 min, as `uptime` prints it: numbers on shared cores need it beside them. */
export const loadAverage = (): string => loadavg().map((x) => x.toFixed(2)).join(' ')
