/** Prometheus text exposition: what every renderer of the edge's `/metrics` shares. */

/** A label value escaped for the text exposition. */
export const labelValue = (value: string): string => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
