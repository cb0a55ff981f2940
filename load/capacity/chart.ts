/**
 * The capacity chart, hand-written SVG: latency percentiles (left axis) and error rate (right
 * axis) against offered load, the SLA's p95 line, and the knee — the highest rate that held and
 * the lowest that broke — marked, so a person sees at a glance where the target stops coping.
 */

export interface ChartStep {
  rate: number
  p50Ms: number
  p95Ms: number
  p99Ms: number
  errorRate: number
}

export interface ChartOptions {
  title: string
  steps: readonly ChartStep[]
  slaP95Ms: number
  maxErrorRate: number
  /** The highest rate that held, and the lowest that broke. */
  capacityRate?: number
  kneeRate?: number
}

const WIDTH = 780
const HEIGHT = 460
const MARGIN = { left: 70, right: 80, top: 56, bottom: 62 }
const PLOT_W = WIDTH - MARGIN.left - MARGIN.right
const PLOT_H = HEIGHT - MARGIN.top - MARGIN.bottom
/** Latencies beyond this many times the SLA are drawn at the top edge: an overloaded step would flatten the rest. */
const LATENCY_CLIP = 4

const SERIES = [
  { id: 'p50', label: 'p50 latency', color: '#1f77b4', key: 'p50Ms' },
  { id: 'p95', label: 'p95 latency', color: '#ff7f0e', key: 'p95Ms' },
  { id: 'p99', label: 'p99 latency', color: '#9467bd', key: 'p99Ms' },
] as const

const escapeXml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** A round step (1, 2 or 5 × 10^k) that cuts `max` into about `ticks` parts. */
export const niceStep = (max: number, ticks = 5): number => {
  const raw = max / ticks
  const magnitude = 10 ** Math.floor(Math.log10(raw))
  return [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? 10 * magnitude
}

const niceMax = (max: number): number => {
  const step = niceStep(max)
  return Math.ceil(max / step) * step
}

const fmt = (x: number): string => (Number.isInteger(x) ? x.toLocaleString('en-US') : x.toFixed(x < 1 ? 2 : 1))
const pct = (x: number): string => `${Number((x * 100).toFixed(3))}%`

export const capacityChart = ({ title, steps, slaP95Ms, maxErrorRate, capacityRate, kneeRate }: ChartOptions): string => {
  const sorted = [...steps].sort((a, b) => a.rate - b.rate)
  const xMax = niceMax(Math.max(1, ...sorted.map((s) => s.rate)) * 1.05)
  const finiteLatencies = sorted.flatMap((s) => [s.p50Ms, s.p95Ms, s.p99Ms]).filter(Number.isFinite)
  const yMax = niceMax(Math.min(Math.max(slaP95Ms * 1.5, ...finiteLatencies), slaP95Ms * LATENCY_CLIP))
  const eMax = niceMax(Math.max(maxErrorRate * 4, ...sorted.map((s) => s.errorRate).filter(Number.isFinite)))
  const x = (rate: number) => MARGIN.left + (rate / xMax) * PLOT_W
  const y = (ms: number) => MARGIN.top + PLOT_H - (Math.min(Number.isFinite(ms) ? ms : yMax, yMax) / yMax) * PLOT_H
  const yErr = (rate: number) => MARGIN.top + PLOT_H - (Math.min(rate, eMax) / eMax) * PLOT_H
  const clipped = finiteLatencies.some((v) => v > yMax) || sorted.some((s) => !Number.isFinite(s.p99Ms))
  const parts: string[] = []
  const add = (s: string) => parts.push(s)

  add(`<?xml version="1.0" encoding="UTF-8"?>`)
  add(`<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`)
  add(`<title>${escapeXml(title)}</title>`)
  add(`<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`)
  add(`<text x="${WIDTH / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`)

  // Knee: the band between the last rate that held and the first that broke.
  if (capacityRate !== undefined || kneeRate !== undefined) {
    add(`<g id="knee">`)
    if (capacityRate !== undefined && kneeRate !== undefined) add(`<rect x="${x(capacityRate).toFixed(1)}" y="${MARGIN.top}" width="${Math.max(1, x(kneeRate) - x(capacityRate)).toFixed(1)}" height="${PLOT_H}" fill="#d62728" fill-opacity="0.08"/>`)
    if (capacityRate !== undefined) {
      add(`<line x1="${x(capacityRate).toFixed(1)}" y1="${MARGIN.top}" x2="${x(capacityRate).toFixed(1)}" y2="${MARGIN.top + PLOT_H}" stroke="#2ca02c" stroke-width="1.5" stroke-dasharray="3 3"/>`)
      add(`<text x="${(x(capacityRate) - 4).toFixed(1)}" y="${MARGIN.top + 14}" text-anchor="end" fill="#2ca02c">capacity ${fmt(capacityRate)} req/s</text>`)
    }
    if (kneeRate !== undefined) add(`<text x="${(x(kneeRate) + 4).toFixed(1)}" y="${MARGIN.top + 28}" fill="#d62728">SLA broke at ${fmt(kneeRate)} req/s</text>`)
    add(`</g>`)
  }

  // Axes, ticks and grid.
  add(`<g id="axes" stroke="#444444">`)
  add(`<line x1="${MARGIN.left}" y1="${MARGIN.top + PLOT_H}" x2="${MARGIN.left + PLOT_W}" y2="${MARGIN.top + PLOT_H}"/>`)
  add(`<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + PLOT_H}"/>`)
  add(`<line x1="${MARGIN.left + PLOT_W}" y1="${MARGIN.top}" x2="${MARGIN.left + PLOT_W}" y2="${MARGIN.top + PLOT_H}"/>`)
  add(`</g>`)
  add(`<g id="ticks" fill="#444444">`)
  for (let v = 0, step = niceStep(xMax); v <= xMax + 1e-9; v += step) {
    add(`<line x1="${x(v).toFixed(1)}" y1="${MARGIN.top + PLOT_H}" x2="${x(v).toFixed(1)}" y2="${MARGIN.top + PLOT_H + 5}" stroke="#444444"/><text x="${x(v).toFixed(1)}" y="${MARGIN.top + PLOT_H + 18}" text-anchor="middle">${fmt(v)}</text>`)
  }
  for (let v = 0, step = niceStep(yMax); v <= yMax + 1e-9; v += step) {
    add(`<line x1="${MARGIN.left}" y1="${y(v).toFixed(1)}" x2="${MARGIN.left + PLOT_W}" y2="${y(v).toFixed(1)}" stroke="#e6e6e6"/><text x="${MARGIN.left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${fmt(v)}</text>`)
  }
  for (let v = 0, step = niceStep(eMax); v <= eMax + 1e-12; v += step) {
    add(`<text x="${MARGIN.left + PLOT_W + 6}" y="${(yErr(v) + 4).toFixed(1)}" fill="#d62728">${pct(v)}</text>`)
  }
  add(`</g>`)
  add(`<text x="${MARGIN.left + PLOT_W / 2}" y="${HEIGHT - 18}" text-anchor="middle">offered load (requests per second, fixed arrival rate)</text>`)
  add(`<text transform="translate(18 ${MARGIN.top + PLOT_H / 2}) rotate(-90)" text-anchor="middle">latency (ms)${clipped ? ` — above ${fmt(yMax)} drawn at the top` : ''}</text>`)
  add(`<text transform="translate(${WIDTH - 14} ${MARGIN.top + PLOT_H / 2}) rotate(90)" text-anchor="middle" fill="#d62728">error rate</text>`)

  // The SLA on p95.
  add(`<g id="sla"><line x1="${MARGIN.left}" y1="${y(slaP95Ms).toFixed(1)}" x2="${MARGIN.left + PLOT_W}" y2="${y(slaP95Ms).toFixed(1)}" stroke="#d62728" stroke-width="1.5" stroke-dasharray="8 4"/>`)
  add(`<text x="${MARGIN.left + 6}" y="${(y(slaP95Ms) - 5).toFixed(1)}" fill="#d62728">SLA p95 &lt; ${fmt(slaP95Ms)} ms</text></g>`)

  const points = (get: (s: ChartStep) => number, scale: (v: number) => number) => sorted.map((s) => `${x(s.rate).toFixed(1)},${scale(get(s)).toFixed(1)}`)
  for (const series of SERIES) {
    const pts = points((s) => s[series.key], y)
    add(`<g id="series-${series.id}" stroke="${series.color}" fill="${series.color}"><polyline points="${pts.join(' ')}" fill="none" stroke-width="2"/>`)
    for (const p of pts) {
      const [cx, cy] = p.split(',')
      add(`<circle cx="${cx}" cy="${cy}" r="3"/>`)
    }
    add(`</g>`)
  }
  const errPts = points((s) => s.errorRate, yErr)
  add(`<g id="series-error-rate" stroke="#d62728" fill="#d62728"><polyline points="${errPts.join(' ')}" fill="none" stroke-width="1.5" stroke-dasharray="4 3"/>`)
  for (const p of errPts) {
    const [cx, cy] = p.split(',')
    add(`<rect x="${(Number(cx) - 2.5).toFixed(1)}" y="${(Number(cy) - 2.5).toFixed(1)}" width="5" height="5"/>`)
  }
  add(`</g>`)

  // Legend, top left inside the plot.
  const legend = [...SERIES.map((s) => ({ label: s.label, color: s.color, dash: '' })), { label: 'error rate (right axis)', color: '#d62728', dash: '4 3' }, { label: 'SLA p95', color: '#d62728', dash: '8 4' }]
  add(`<g id="legend"><rect x="${MARGIN.left + 10}" y="${MARGIN.top + 36}" width="170" height="${legend.length * 18 + 10}" fill="#ffffff" fill-opacity="0.9" stroke="#cccccc"/>`)
  legend.forEach((item, i) => {
    const ly = MARGIN.top + 52 + i * 18
    add(`<line x1="${MARGIN.left + 18}" y1="${ly - 4}" x2="${MARGIN.left + 42}" y2="${ly - 4}" stroke="${item.color}" stroke-width="2"${item.dash ? ` stroke-dasharray="${item.dash}"` : ''}/><text x="${MARGIN.left + 48}" y="${ly}">${escapeXml(item.label)}</text>`)
  })
  add(`</g>`)
  add(`</svg>`)
  return `${parts.join('\n')}\n`
}
