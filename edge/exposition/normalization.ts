import { labelValue } from './text.ts'
import { NORMALIZATION_FIXES, NORMALIZED, type Tally, fieldParts } from '../stores/tallies/tally.ts'

export const NORMALIZED_METRIC = 'edge_input_normalized_requests_total'
export const NORMALIZATION_FIXES_METRIC = 'edge_input_normalization_fixes_total'

/**
 * Prometheus text exposition of the input-normalization counts per API key, from the request
 * metrics' tally (where `RequestMetrics.normalized` counts them): a client with an encoding bug
 * shows up as a number on a dashboard rather than a line among millions. Keys are client-chosen
 * names, so they are only ever Map keys, never object properties (`constructor` is a key name too).
 */
export const normalizationExposition = (tally: Tally): string => {
  const requests = new Map<string, number>()
  const fixes = new Map<string, number>()
  for (const [name, count] of tally) {
    const [kind, key, ...rest] = fieldParts(name)
    if (key === undefined || rest.length > 0) continue
    if (kind === NORMALIZED) requests.set(key, count)
    else if (kind === NORMALIZATION_FIXES) fixes.set(key, count)
  }
  const keys = [...requests.keys()].sort()
  return [
    `# HELP ${NORMALIZED_METRIC} Requests whose input the edge had to fix (double encoding, BOM, whitespace, numeric strings), by API key.`,
    `# TYPE ${NORMALIZED_METRIC} counter`,
    ...keys.map((k) => `${NORMALIZED_METRIC}{key="${labelValue(k)}"} ${requests.get(k)}`),
    `# HELP ${NORMALIZATION_FIXES_METRIC} Input fixes applied, by API key.`,
    `# TYPE ${NORMALIZATION_FIXES_METRIC} counter`,
    ...keys.map((k) => `${NORMALIZATION_FIXES_METRIC}{key="${labelValue(k)}"} ${fixes.get(k) ?? 0}`),
    '',
  ].join('\n')
}
