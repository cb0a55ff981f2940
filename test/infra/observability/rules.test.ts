import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse, parseAllDocuments, stringify } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DURATION_BUCKETS } from '../../../edge/stores/tallies/tally.ts'
import { RENDERED_DIR as K8S_RENDERED_DIR } from '../../../infra/k8s/render.ts'
import { RENDERED_DIR, RULES_FILE, RULE_TESTS_FILE, render } from '../../../infra/observability/render.ts'
import { ALERT_CASES, RECORDING_CASES } from '../../../infra/observability/rule-tests.ts'
import { LATENCY_SLO, SHADOW_RECORDINGS, allAlerts, allRecordings, ruleGroups, type PrometheusRuleGroup } from '../../../infra/observability/rules.ts'
import { promtool } from './support/promtool.ts'

describe('infra/observability rendering', () => {
  it('is deterministic and the committed files are a fresh render (run `npm run observability:render`)', async () => {
    expect(render()).toEqual(render())
    for (const [file, text] of Object.entries(render())) expect(await readFile(join(RENDERED_DIR, file), 'utf8'), file).toBe(text)
  })

  it('the PrometheusRule next to the ServiceMonitor carries the same groups as the rule file', async () => {
    const [doc] = parseAllDocuments(await readFile(join(K8S_RENDERED_DIR, 'prometheus-rules.yaml'), 'utf8')).map((d) => d.toJS() as { kind: string; spec: { groups: PrometheusRuleGroup[] } })
    const file = parse(await readFile(join(RENDERED_DIR, RULES_FILE), 'utf8')) as { groups: PrometheusRuleGroup[] }
    expect(doc!.kind).toBe('PrometheusRule')
    expect(doc!.spec.groups).toEqual(file.groups)
  })
})

describe('the rules', () => {
  it('name every alert once, with a severity, a summary, a runbook and only $labels templates', () => {
    const alerts = allAlerts()
    expect(new Set(alerts.map((a) => a.alert)).size).toBe(alerts.length)
    expect(new Set(allRecordings().map((r) => r.record)).size).toBe(allRecordings().length)
    for (const a of alerts) {
      expect(['critical', 'warning'], a.alert).toContain(a.severity)
      expect(a.summary.length, a.alert).toBeGreaterThan(10)
      expect(a.runbook.length, a.alert).toBeGreaterThan(40)
      // The promtool cases expand templates themselves: any other template would not match.
      for (const text of [a.summary, a.runbook]) expect(text.replace(/\{\{ \$labels\.\w+ \}\}/g, ''), a.alert).not.toMatch(/\{\{|\}\}/)
    }
  })

  it('measure the latency SLO at a bucket boundary of the edge histogram (else the bad-event ratio is interpolated)', () => {
    expect(DURATION_BUCKETS).toContain(LATENCY_SLO.thresholdSeconds)
  })

  it('have a firing and a quiet unit-test case for every alert', () => {
    for (const a of allAlerts()) {
      const cases = ALERT_CASES[a.alert] ?? []
      expect(cases.some((c) => c.fires), `${a.alert} firing`).toBe(true)
      expect(cases.some((c) => !c.fires), `${a.alert} quiet`).toBe(true)
    }
    expect(Object.keys(ALERT_CASES).sort()).toEqual(allAlerts().map((a) => a.alert).sort())
  })

  it('have a promtool case for every shadow-comparison recording, each a recorded rule', () => {
    const recorded = allRecordings().map((r) => r.record)
    for (const record of Object.values(SHADOW_RECORDINGS)) {
      expect(recorded).toContain(record)
      expect(RECORDING_CASES[record]?.length, record).toBeGreaterThan(0)
    }
  })
})

describe('promtool', () => {
  let scratch: string
  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'rules-'))
  })
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true })
  })

  it('check rules: the committed rule file is clean', async () => {
    const { code, output } = await promtool(['check', 'rules', RULES_FILE], RENDERED_DIR)
    expect(code, output).toBe(0)
    const rules = ruleGroups().flatMap((g) => g.rules).length
    expect(output).toContain(`SUCCESS: ${rules} rules found`)
    expect(output).not.toMatch(/warning/i)
  })

  it('test rules: every alert fires where it should and stays quiet in its near misses, and the shadow recordings give their values', async () => {
    const { code, output } = await promtool(['test', 'rules', RULE_TESTS_FILE], RENDERED_DIR)
    expect(code, output).toBe(0)
    expect(output).toContain('SUCCESS')
  })

  it('the unit tests are real: alerts that can never fire fail every firing case', async () => {
    const groups = ruleGroups().map((g) => ({ ...g, rules: g.rules.map((r) => ('alert' in r ? { ...r, expr: `(${r.expr}) > Inf` } : r)) }))
    await writeFile(join(scratch, RULES_FILE), stringify({ groups }))
    await writeFile(join(scratch, RULE_TESTS_FILE), render()[RULE_TESTS_FILE]!)
    const { code, output } = await promtool(['test', 'rules', RULE_TESTS_FILE], scratch)
    expect(code).not.toBe(0)
    for (const a of allAlerts()) expect(output, a.alert).toContain(`alertname: ${a.alert},`)
  })
})
