import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { stringify } from 'yaml'
import { dashboard } from './dashboard.ts'
import { ruleTests } from './rule-tests.ts'
import { ruleGroups } from './rules.ts'

export const RENDERED_DIR = fileURLToPath(new URL('./rendered/', import.meta.url))
export const RULES_FILE = 'rules.yaml'
export const RULE_TESTS_FILE = 'rules.test.yaml'
export const DASHBOARD_FILE = 'dashboard.json'

const header = (what: string) => `# Rendered by \`npm run observability:render\` from infra/observability/${what}: edit that, not this file.\n`
const yaml = (value: unknown) => stringify(value, { lineWidth: 0 })

/** Every rendered file by name: the Prometheus rule file, its promtool unit tests, the Grafana dashboard. */
export const render = (): Record<string, string> => ({
  [RULES_FILE]: header('rules.ts') + yaml({ groups: ruleGroups() }),
  [RULE_TESTS_FILE]: header('rule-tests.ts') + yaml(ruleTests(RULES_FILE)),
  [DASHBOARD_FILE]: `${JSON.stringify(dashboard(), null, 2)}\n`,
})

const write = async (): Promise<void> => {
  const files = render()
  await mkdir(RENDERED_DIR, { recursive: true })
  for (const [file, text] of Object.entries(files)) await writeFile(join(RENDERED_DIR, file), text)
  process.stdout.write(`wrote ${Object.keys(files).map((f) => `infra/observability/rendered/${f}`).join(', ')}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await write()
