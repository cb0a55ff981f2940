#!/usr/bin/env node
// `edge-infer`: the project's one command line (tools/cli/). Plain JavaScript that checks the Node
// version first, then loads the TypeScript through tsx.
import { nodeVersionProblem } from './node-version.mjs'

const problem = nodeVersionProblem()
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`)
  process.exit(1)
}
const { register } = await import('tsx/esm/api')
register()
await import('../tools/cli/main.ts')
