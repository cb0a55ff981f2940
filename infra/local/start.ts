import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { readFileSync } from 'node:fs'
import { encodeInstance, featureSpec, specWidth } from '../../shared/feature-spec.ts'

/**
 * `npm start`: the local stack on embedded defaults. Today that is the inference backend with the
 * bundled demo repository; it prints where it listens and a request that works as pasted.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PORT = process.env.PORT ?? '8000'

const exampleRequest = (): string => {
  const config = JSON.parse(readFileSync(new URL('../../models/credit-risk/config.json', import.meta.url), 'utf8')) as { features: unknown }
  const spec = featureSpec.parse(config.features)
  const row = new Float32Array(specWidth(spec))
  encodeInstance(spec, {
    age: 34, income: 52_000, debt_ratio: 0.35, credit_utilization: 0.4, credit_lines: 4, months_employed: 30,
    loan_amount: 12_000, loan_term_months: 36, num_late_payments: 1, region: 'north', housing: 'rent',
    has_default_history: false, account_age_months: 48, num_products: 2,
  }, row)
  return JSON.stringify({ id: 'hello', inputs: [{ name: 'features', shape: [1, row.length], datatype: 'FP32', data: Array.from(row, (v) => Number(v.toPrecision(7))) }] })
}

const backend = spawn(process.execPath, ['--import', 'tsx', 'backend/server.ts'], {
  cwd: ROOT,
  env: { ...process.env, PORT },
  stdio: ['ignore', 'pipe', 'inherit'],
})

createInterface({ input: backend.stdout! }).on('line', (line) => {
  process.stdout.write(`${line}\n`)
  let entry: { msg?: string; url?: string }
  try {
    entry = JSON.parse(line) as typeof entry
  } catch {
    return
  }
  if (entry.msg !== 'pinned models warm') return
  const url = `http://127.0.0.1:${PORT}`
  process.stdout.write([
    '',
    `edge-infer backend ready on ${url} (Ctrl-C stops it)`,
    'Try:',
    `  curl -s ${url}/v2/models/credit-risk/infer -H 'content-type: application/json' -d '${exampleRequest()}'`,
    '',
  ].join('\n'))
})

const stop = () => backend.kill('SIGTERM')
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
backend.on('exit', (code) => process.exit(code ?? 0))
