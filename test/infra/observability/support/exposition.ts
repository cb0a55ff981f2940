const HISTOGRAM_SERIES = ['_bucket', '_sum', '_count']

/** Series names a Prometheus text exposition declares (`# TYPE`), histograms as their _bucket/_sum/_count series, observed or not. */
export const exposedNames = (text: string): Set<string> =>
  new Set([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) => (type === 'histogram' ? HISTOGRAM_SERIES.map((s) => name! + s) : [name!])))
