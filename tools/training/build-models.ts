import { parseArgs } from 'node:util'
import { buildDemoRepository, type VersionSummary } from './demo-repository.ts'

/**
 * `npm run models:build [-- --out DIR]`: trains the demo models and writes the repository. Also
 * run from dist/ where no development tool is installed, so it reads its one flag with node:util
 * rather than the CLI's commander.
 */
const USAGE = `usage: npm run models:build -- [--out DIR]

  Trains the demo models and writes the model repository into --out (default models).`

let values
try {
  ;({ values } = parseArgs({ options: { out: { type: 'string', default: 'models' }, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }))
} catch (err) {
  process.stderr.write(`error: ${(err as Error).message.split('\n')[0]} (see npm run models:build -- --help)\n`)
  process.exit(2)
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`)
  process.exit(0)
}
const outDir = values.out

const started = performance.now()
const summary = await buildDemoRepository(outDir)
const seconds = (performance.now() - started) / 1000

const cell = (x: number): string => x.toFixed(4).padStart(8)
const row = (label: string, accuracy: number, auc: number, logLoss: number): string =>
  `${label.padEnd(22)}${cell(accuracy)}${cell(auc)}${cell(logLoss)}`
const versionRows = (v: VersionSummary): string[] => [
  row(`v${v.version} (${v.epochs} epochs)`, v.holdout.accuracy, v.holdout.auc, v.holdout.log_loss),
  row('  constant predictor', v.constant.accuracy, v.constant.auc, v.constant.log_loss),
]

console.log(`${summary.model} → ${outDir}/${summary.model} in ${seconds.toFixed(1)} s`)
console.log(`${'holdout'.padEnd(22)}${'acc'.padStart(8)}${'auc'.padStart(8)}${'logloss'.padStart(8)}`)
for (const v of summary.versions) console.log(versionRows(v).join('\n'))
const worst = Math.max(...summary.versions.map((v) => v.onnxMaxDiff))
console.log(`onnxruntime matches the TypeScript forward pass within ${worst.toExponential(1)}`)
