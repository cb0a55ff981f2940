// Runs one command of the local stack on a leash: `node dev/leash.mjs <command> [args...]`.
//
// The command runs in its own process group (wrangler leaves esbuild and workerd behind if only
// it is killed), and that whole group is stopped when the leash's stdin closes — the process that
// started the leash is gone, however it died, kill -9 included — or when the leash itself gets
// SIGINT, SIGTERM or SIGHUP. The leash exits with the command's exit code once the group is gone,
// and writes the command's pid to fd 3 when its starter opened one.
// Plain JavaScript, so that it starts without a loader.
import { spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'

const [command, ...args] = process.argv.slice(2)
if (command === undefined) {
  process.stderr.write('usage: node dev/leash.mjs <command> [args...]\n')
  process.exit(2)
}

/** How long the group has after SIGTERM before it is killed outright. */
const GRACE_MS = 10_000

const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'], detached: true })
let stopping = false

// The command's own pid goes to fd 3 when the starter opened one (what it prints and may signal).
const pidOut = createWriteStream('', { fd: 3 })
pidOut.on('error', () => {})
pidOut.end(`${child.pid ?? ''}\n`)

/** @param {NodeJS.Signals} signal */
const signalGroup = (signal) => {
  // No pid: the command never started, and -0 would be this process's own group.
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // the group is already gone
  }
}

const stop = () => {
  if (stopping) return
  stopping = true
  signalGroup('SIGTERM')
  setTimeout(() => signalGroup('SIGKILL'), GRACE_MS).unref()
}

child.on('error', (error) => {
  process.stderr.write(`cannot run ${command}: ${error.message}\n`)
  process.exit(127)
})
child.on('exit', (code, signal) => {
  // Whatever the command left in its group goes with it.
  signalGroup('SIGTERM')
  if (signal === null || stopping) process.exit(code ?? 0)
  // Killed by a signal nobody here sent: end the same way, so the starter sees what happened.
  for (const caught of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.removeAllListeners(caught)
  process.kill(process.pid, signal)
})

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, stop)
process.stdin.on('end', stop)
process.stdin.on('close', stop)
process.stdin.on('error', stop)
process.stdin.resume()
