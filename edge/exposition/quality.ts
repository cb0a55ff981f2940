import type { QualityFigures } from '../../shared/quality.ts'
import { labelValue } from './text.ts'
import type { VersionQuality } from '../quality/model-quality.ts'

/** The window the scrape's quality gauges cover. */
export const SCRAPE_WINDOW_MINUTES = 60

const FIGURES = ['accuracy', 'roc_auc', 'log_loss', 'ece', 'labels'] as const satisfies ReadonlyArray<keyof QualityFigures>

const HELP: Record<(typeof FIGURES)[number], string> = {
  accuracy: 'accuracy by the model threshold',
  roc_auc: 'binned ROC AUC',
  log_loss: 'mean log loss',
  ece: 'expected calibration error over the prediction bins',
  labels: 'rows the figures rest on',
}

/** The gauge of one figure: `edge_infer_realized_accuracy`, `edge_infer_estimated_roc_auc`, … */
export const qualityGauge = (source: 'realized' | 'estimated', figure: (typeof FIGURES)[number]): string => `edge_infer_${source}_${figure}`

/**
 * Gauges of each version's quality over the last `SCRAPE_WINDOW_MINUTES`:
 * `edge_infer_realized_*` from feedback labels, `edge_infer_estimated_*` the backend's label-free
 * estimate (CBPE) of the same figure. A figure without enough rows to say is left out.
 */
export const qualityExposition = (models: ReadonlyArray<{ model: string; versions: readonly VersionQuality[] }>): string => {
  const lines: string[] = []
  for (const source of ['realized', 'estimated'] as const) {
    for (const figure of FIGURES) {
      const name = qualityGauge(source, figure)
      const samples: string[] = []
      for (const { model, versions } of models) {
        for (const v of versions) {
          const value = v[source]?.[figure]
          if (value !== null && value !== undefined) samples.push(`${name}{model="${labelValue(model)}",version="${v.version}"} ${value}`)
        }
      }
      lines.push(`# HELP ${name} ${source === 'realized' ? 'Realized' : 'Estimated (CBPE, label-free)'} ${HELP[figure]}, per model version, over the last ${SCRAPE_WINDOW_MINUTES} minutes.`, `# TYPE ${name} gauge`, ...samples.sort())
    }
  }
  return `${lines.join('\n')}\n`
}
