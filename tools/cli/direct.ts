import { pathToFileURL } from 'node:url'

/**
 * An entry point run as a file (`tsx load/run/main.ts …`, as npm scripts and tests do) is the
 * same as `edge-infer <command> …`: its flags go through the one command-line definition. Not
 * awaited by the entry: the command imports the entry module, which must finish evaluating first.
 */
export const runIfMain = (moduleUrl: string, command: readonly string[]): void => {
  const entry = process.argv[1]
  if (entry === undefined || pathToFileURL(entry).href !== moduleUrl) return
  import('./program.ts').then(({ runCli }) => runCli([...command, ...process.argv.slice(2)])).catch((err: unknown) => {
    process.stderr.write(`${command.join(' ')} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  })
}
