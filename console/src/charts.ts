import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'

export interface Series {
  label: string
  /** One value per x. */
  values: number[]
  /** A name of the stylesheet's palette (--series-<name>). */
  color: string
  /** Dash and gap lengths in pixels, for a reference line drawn beside the measured ones. */
  dash?: number[]
}

const WIDTH = 560
const HEIGHT = 220

/** A colour from the stylesheet, so the palette lives in one place. */
const colour = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(`--series-${name}`).trim() || '#888'

const chart = (target: HTMLElement, x: number[], series: readonly Series[], axes: { x: string; y: string }, path: (s: Series) => Partial<uPlot.Series>, xValue: (v: number) => string, xScale: uPlot.Scale = { time: false }): uPlot =>
  new uPlot({
    width: WIDTH,
    height: HEIGHT,
    cursor: { drag: { x: false, y: false } },
    scales: { x: xScale },
    axes: [{ label: axes.x, values: (_u, ticks) => ticks.map(xValue) }, { label: axes.y }],
    series: [{ label: axes.x, value: (_u, v) => (v === null ? '' : xValue(v)) }, ...series.map((s) => ({ label: s.label, stroke: colour(s.color), width: 2, ...(s.dash ? { dash: s.dash } : {}), ...path(s) }))],
  }, [x, ...series.map((s) => s.values)], target)

/** Bars, one per x (a single distribution: batch sizes). */
export const barChart = (target: HTMLElement, x: number[], series: Series, axes: { x: string; y: string }, xValue: (v: number) => string = String): uPlot =>
  chart(target, x, [series], axes, (s) => ({ fill: colour(s.color), paths: uPlot.paths.bars!({ size: [0.7, 48] }), points: { show: false } }), xValue, { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] })

/** Histograms over the same bins drawn as outlines, so several compare on one chart. */
export const histogramChart = (target: HTMLElement, x: number[], series: readonly Series[], axes: { x: string; y: string }, xValue: (v: number) => string = String): uPlot =>
  chart(target, x, series, axes, () => ({ paths: uPlot.paths.stepped!({ align: 1 }), points: { show: false } }), xValue)

/** A step line over time (seconds since the epoch), with a point at each change. */
export const stepChart = (target: HTMLElement, times: number[], values: number[], label: string): uPlot =>
  new uPlot({
    width: WIDTH,
    height: HEIGHT,
    scales: { y: { range: [0, 100] } },
    axes: [{}, { label }],
    series: [{}, { label, stroke: colour('canary'), width: 2, paths: uPlot.paths.stepped!({ align: 1 }), points: { show: true, size: 6 } }],
  }, [times, values], target)
