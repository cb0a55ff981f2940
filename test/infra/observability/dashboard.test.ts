import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { queueDepthQuery } from '../../../infra/k8s/autoscaling.ts'
import { defaultConfig } from '../../../infra/k8s/config.ts'
import { TARGET_ROWS_PER_REPLICA } from '../../../infra/k8s/sizing.ts'
import { DASHBOARD_FILE, RENDERED_DIR } from '../../../infra/observability/render.ts'
import { allAlerts, allRecordings } from '../../../infra/observability/rules.ts'
import { EDGE_METRICS, EDGE_QUALITY_METRICS, EXTERNAL_METRICS } from '../../../infra/observability/sources.ts'
import { startBackend, type BackendProcess } from '../../backend/support/backend-process.ts'
import { DEMO_REPOSITORY } from '../../backend/support/fixture-repository.ts'
import { leafPanels, metricNames, panelQueries, type DashboardView } from './support/promql.ts'
import { exposedNames } from './support/exposition.ts'

const committed = async (): Promise<DashboardView> => JSON.parse(await readFile(join(RENDERED_DIR, DASHBOARD_FILE), 'utf8')) as DashboardView

describe('metricNames', () => {
  it('finds metrics and recording rules, not functions, labels, strings or durations', () => {
    expect(metricNames('sum by (le, model) (rate(a_bucket{model=~"x_total"}[5m])) / on (job) b:c:rate5m or up{job="j"} * 0 > 0.5')).toEqual(['a_bucket', 'b:c:rate5m', 'up'])
  })
})

describe('the dashboard', () => {
  let backend: BackendProcess
  beforeAll(async () => {
    backend = await startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY })
  })
  afterAll(async () => {
    await backend?.stop()
  })

  it('parses, has a Prometheus datasource variable, and every panel queries through it', async () => {
    const d = await committed()
    expect(d.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' })
    const panels = leafPanels(d)
    expect(panels.length).toBeGreaterThanOrEqual(15)
    for (const p of panels) {
      expect(p.targets?.length, p.title).toBeGreaterThan(0)
      for (const t of p.targets ?? []) expect(t.datasource?.uid, p.title).toBe('${datasource}')
    }
  })

  it('every panel a runbook sends the reader to is on the dashboard', async () => {
    const titles = leafPanels(await committed()).map((p) => p.title)
    const named = allAlerts().flatMap((a) => [...a.runbook.matchAll(/[Pp]anels? ((?:"[^"]+"(?:,| and)? ?)+)/g)].flatMap((m) => [...m[1]!.matchAll(/"([^"]+)"/g)].map((t) => t[1]!)))
    expect(named.length).toBeGreaterThan(3)
    for (const title of named) expect(titles.some((t) => t.startsWith(title)), title).toBe(true)
  })

  it('draws the queue depth per replica against the KEDA target from infra/k8s', async () => {
    const [panel] = leafPanels(await committed()).filter((p) => p.title.startsWith('Queue depth per replica'))
    expect(panel!.targets![0]!.expr).toContain(queueDepthQuery(defaultConfig))
    expect(panel!.fieldConfig?.defaults?.thresholds?.steps.map((s) => s.value)).toEqual([null, TARGET_ROWS_PER_REPLICA])
  })

  it('every panel query and rule reads only series that exist: a real backend\'s, the edge\'s, the recording rules\' or named external ones', async () => {
    const backendNames = exposedNames(await (await fetch(`${backend.url}/metrics`)).text())
    const histogramParts = (name: string) => [name, `${name}_bucket`, `${name}_sum`, `${name}_count`]
    const known = new Set([...backendNames, ...EDGE_METRICS.flatMap(histogramParts), ...EDGE_QUALITY_METRICS, ...allRecordings().map((r) => r.record), ...Object.keys(EXTERNAL_METRICS)])
    const exprs = [...panelQueries(await committed()).map((q) => q.expr), ...allRecordings().map((r) => r.expr), ...allAlerts().map((a) => `${a.signal} ${a.condition}`)]
    const unknown = exprs.flatMap((e) => metricNames(e).filter((n) => !known.has(n)).map((n) => `${n} in ${e}`))
    expect(unknown).toEqual([])
  })
})
