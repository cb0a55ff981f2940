import { runCli } from './program.ts'

/** `edge-infer …` (bin/edge-infer.mjs has checked the Node version and registered tsx). */
await runCli(process.argv.slice(2))
