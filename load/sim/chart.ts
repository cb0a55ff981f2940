import type { Bucket } from './simulate.ts'

/**
 * The run as one SVG a person reads at a glance: three panels over a shared time axis — offered
 * rate and replicas, queue depth against the autoscaler's target, p95 against the SLA with the
 * violating minutes shaded. Hand-written SVG: no browser, no dependency.
 */

export interface ChartInput {
  title: string
  buckets: readonly Bucket[]
  bucketS: number
  slaP95S: number
  /** The per-replica target; the panel draws target × ready replicas. */
  target: number
  maxReplicas: number
}

const WIDTH = 1000
const PANEL_HEIGHT = 170
const LEFT = 70
const RIGHT = 70
const TOP = 40
const GAP = 50
const PLOT_WIDTH = WIDTH - LEFT - RIGHT

const COLORS = { rate: '#9aa5b1', replicas: '#1f6feb', ready: '#0b3d91', depth: '#8250df', target: '#bf8700', p95: '#cf222e', sla: '#1a7f37', violation: '#ffebe9' }

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const fmt = (x: number) => (x === 0 ? '0' : x >= 10_000 ? `${Math.round(x / 1000)}k` : x >= 1000 ? `${(x / 1000).toFixed(1)}k` : x >= 10 ? String(Math.round(x)) : x.toFixed(x >= 1 ? 1 : 2))

/** A round upper bound for an axis: 1, 2 or 5 times a power of ten. */
const niceMax = (x: number): number => {
  if (!(x > 0)) return 1
  const power = 10 ** Math.floor(Math.log10(x))
  return [1, 2, 5, 10].map((m) => m * power).find((v) => v >= x) ?? 10 * power
}

interface Panel {
  top: number
  x(i: number): number
  y(v: number, max: number): number
}

const panel = (index: number, count: number): Panel => {
  const top = TOP + index * (PANEL_HEIGHT + GAP)
  return {
    top,
    x: (i) => LEFT + (count <= 1 ? 0 : (i / (count - 1)) * PLOT_WIDTH),
    y: (v, max) => top + PANEL_HEIGHT - (Math.min(v, max) / max) * PANEL_HEIGHT,
  }
}

const polyline = (points: string, color: string, width = 1.5, dash = '') =>
  `<polyline fill="none" stroke="${color}" stroke-width="${width}"${dash ? ` stroke-dasharray="${dash}"` : ''} points="${points}"/>`

const line = (p: Panel, values: readonly number[], max: number, color: string, width?: number, dash?: string) =>
  polyline(values.map((v, i) => `${p.x(i).toFixed(1)},${p.y(Number.isFinite(v) ? v : 0, max).toFixed(1)}`).join(' '), color, width, dash)

/** A step line: replicas change at instants, not gradually. */
const steps = (p: Panel, values: readonly number[], max: number, color: string, width?: number) => {
  const pts: string[] = []
  values.forEach((v, i) => {
    if (i > 0) pts.push(`${p.x(i).toFixed(1)},${p.y(values[i - 1], max).toFixed(1)}`)
    pts.push(`${p.x(i).toFixed(1)},${p.y(v, max).toFixed(1)}`)
  })
  return polyline(pts.join(' '), color, width)
}

const axis = (p: Panel, max: number, label: string, side: 'left' | 'right', color = '#24292f') => {
  const x = side === 'left' ? LEFT : LEFT + PLOT_WIDTH
  const anchor = side === 'left' ? 'end' : 'start'
  const dx = side === 'left' ? -6 : 6
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const y = p.y(f * max, max)
    return `<text x="${x + dx}" y="${(y + 4).toFixed(1)}" text-anchor="${anchor}" fill="${color}">${fmt(f * max)}</text>`
  })
  const lx = side === 'left' ? 16 : WIDTH - 12
  const ly = p.top + PANEL_HEIGHT / 2
  return [...ticks, `<text x="${lx}" y="${ly}" transform="rotate(-90 ${lx} ${ly})" text-anchor="middle" fill="${color}">${esc(label)}</text>`].join('')
}

const frame = (p: Panel, title: string) => {
  const grid = [0.25, 0.5, 0.75].map((f) => {
    const y = p.top + PANEL_HEIGHT * f
    return `<line x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${y}" y2="${y}" stroke="#eaeef2"/>`
  })
  return [
    ...grid,
    `<rect x="${LEFT}" y="${p.top}" width="${PLOT_WIDTH}" height="${PANEL_HEIGHT}" fill="none" stroke="#8c959f"/>`,
    `<text x="${LEFT}" y="${p.top - 8}" font-weight="bold">${esc(title)}</text>`,
  ].join('')
}

const legend = (p: Panel, entries: ReadonlyArray<[string, string, string?]>) => {
  let x = LEFT + PLOT_WIDTH
  return entries
    .slice()
    .reverse()
    .map(([label, color, dash]) => {
      x -= label.length * 6.5 + 34
      return `<line x1="${x}" x2="${x + 20}" y1="${p.top - 12}" y2="${p.top - 12}" stroke="${color}" stroke-width="3"${dash ? ` stroke-dasharray="${dash}"` : ''}/><text x="${x + 25}" y="${p.top - 8}">${esc(label)}</text>`
    })
    .join('')
}

const timeAxis = (p: Panel, count: number, bucketS: number) => {
  const totalS = count * bucketS
  const stepS = totalS > 6 * 3600 ? 3 * 3600 : totalS > 3600 ? 1800 : 300
  const labels: string[] = []
  for (let s = 0; s <= totalS; s += stepS) {
    const x = LEFT + (s / totalS) * PLOT_WIDTH
    const h = Math.floor(s / 3600)
    const m = Math.floor((s % 3600) / 60)
    labels.push(`<text x="${x.toFixed(1)}" y="${p.top + PANEL_HEIGHT + 16}" text-anchor="middle">${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}</text>`)
  }
  labels.push(`<text x="${LEFT + PLOT_WIDTH / 2}" y="${p.top + PANEL_HEIGHT + 34}" text-anchor="middle">time into the trace (h:min)</text>`)
  return labels.join('')
}

export const renderChart = ({ title, buckets, bucketS, slaP95S, target, maxReplicas }: ChartInput): string => {
  const n = buckets.length
  const [load, depth, latency] = [0, 1, 2].map((i) => panel(i, n))
  const rate = buckets.map((b) => b.arrivals / bucketS)
  const rateMax = niceMax(Math.max(...rate))
  const replicaMax = Math.max(maxReplicas, ...buckets.map((b) => b.replicas))
  const depthMax = niceMax(Math.max(...buckets.map((b) => b.maxDepth), target * replicaMax))
  const p95Ms = buckets.map((b) => b.p95S * 1000)
  const latencyMax = niceMax(Math.min(Math.max(slaP95S * 1000 * 2, ...p95Ms.filter(Number.isFinite)), slaP95S * 1000 * 10))
  const slotWidth = PLOT_WIDTH / Math.max(1, n - 1)
  const shaded = buckets.flatMap((b, i) =>
    b.slaViolated ? [`<rect x="${(latency.x(i) - slotWidth / 2).toFixed(1)}" y="${latency.top}" width="${slotWidth.toFixed(1)}" height="${PANEL_HEIGHT}" fill="${COLORS.violation}"/>`] : [])
  const slaY = latency.y(slaP95S * 1000, latencyMax)
  const height = TOP + 3 * PANEL_HEIGHT + 2 * GAP + 50
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11" fill="#24292f">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="${LEFT}" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`,
    frame(load, 'Offered load and replicas'),
    line(load, rate, rateMax, COLORS.rate),
    steps(load, buckets.map((b) => b.replicas), replicaMax, COLORS.replicas, 2),
    steps(load, buckets.map((b) => b.readyReplicas), replicaMax, COLORS.ready, 1),
    axis(load, rateMax, 'requests/s', 'left', '#57606a'),
    axis(load, replicaMax, 'replicas', 'right', COLORS.replicas),
    legend(load, [['rate (req/s)', COLORS.rate], ['pods held', COLORS.replicas], ['pods ready', COLORS.ready]]),
    frame(depth, 'Queue depth (rows waiting + running, all pods)'),
    line(depth, buckets.map((b) => b.maxDepth), depthMax, '#d8b9ff', 1),
    line(depth, buckets.map((b) => b.meanDepth), depthMax, COLORS.depth),
    line(depth, buckets.map((b) => target * b.readyReplicas), depthMax, COLORS.target, 1.5, '5,3'),
    axis(depth, depthMax, 'rows', 'left'),
    legend(depth, [['mean', COLORS.depth], ['max', '#d8b9ff'], ['target × ready pods', COLORS.target, '5,3']]),
    frame(latency, `p95 latency per ${bucketS / 60 >= 1 ? `${bucketS / 60} min` : `${bucketS} s`} (shaded: SLA violated or requests refused)`),
    ...shaded,
    `<line x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${slaY.toFixed(1)}" y2="${slaY.toFixed(1)}" stroke="${COLORS.sla}" stroke-width="1.5" stroke-dasharray="6,3"/>`,
    line(latency, p95Ms, latencyMax, COLORS.p95),
    axis(latency, latencyMax, 'ms', 'left'),
    legend(latency, [['p95', COLORS.p95], [`SLA ${fmt(slaP95S * 1000)} ms`, COLORS.sla, '6,3'], ['violation', '#ffcecb']]),
    timeAxis(latency, n, bucketS),
    '</svg>',
    '',
  ].join('\n')
}
