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
    // Labels only: a live legend shows "--" per series until hovered, and a row for x.
    legend: { live: false },
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

/** Least span of the time axis, in seconds: one change alone would otherwise be auto-ranged over years. */
const MIN_TIME_SPAN_S = 600

/**
 * A step line over time (seconds since the epoch), with a point at each change, held to `until`
 * (seconds; now) so the last value is drawn as lasting; the axis spans at least ten minutes.
 */
export const stepChart = (target: HTMLElement, times: number[], values: number[], label: string, until: number): uPlot => {
  const last = times[times.length - 1]
  const x = until > last ? [...times, until] : times
  const y = until > last ? [...values, values[values.length - 1]] : values
  return new uPlot({
    width: WIDTH,
    height: HEIGHT,
    legend: { live: false },
    scales: {
      x: { time: true, range: (_u, min, max) => (max - min >= MIN_TIME_SPAN_S ? [min, max] : [max - MIN_TIME_SPAN_S, max]) },
      y: { range: [0, 100] },
    },
    axes: [{}, { label }],
    series: [{}, { label, stroke: colour('canary'), width: 2, paths: uPlot.paths.stepped!({ align: 1 }), points: { show: true, size: 6 } }],
    hooks: {
      // The axis is drawn on a canvas: its span is also said in the DOM, for a reader and for the tests.
      setScale: [(u, key) => {
        if (key !== 'x') return
        target.dataset.xFrom = String(u.scales.x.min)
        target.dataset.xTo = String(u.scales.x.max)
      }],
    },
  }, [x, y], target)
}
