import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, type Sampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace'

/** The spec's default (OTEL_TRACES_SAMPLER unset): follow the caller's decision, sample every trace the edge starts. */
export const DEFAULT_SAMPLER = 'parentbased_always_on'

/** A ratio as OTEL_TRACES_SAMPLER_ARG gives it: a number in [0, 1], 1 when unset or unusable (as the spec says). */
const ratioOf = (arg: string | undefined): number => {
  const ratio = Number(arg?.trim() || NaN)
  return Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1
}

const ROOTS: Record<string, (arg: string | undefined) => Sampler> = {
  always_on: () => new AlwaysOnSampler(),
  always_off: () => new AlwaysOffSampler(),
  traceidratio: (arg) => new TraceIdRatioBasedSampler(ratioOf(arg)),
}

/**
 * The sampler OTEL_TRACES_SAMPLER names, with OTEL_TRACES_SAMPLER_ARG: `always_on`, `always_off`,
 * `traceidratio`, and each of them as `parentbased_<name>` (the caller's sampled flag decides
 * when it sends a traceparent). A name the edge does not know (`jaeger_remote`, `xray`) is
 * reported in `unknown` and the default is used, as the spec asks.
 */
export const samplerFrom = (name: string | undefined, arg: string | undefined): { sampler: Sampler; unknown?: string } => {
  const wanted = name?.trim().toLowerCase() || DEFAULT_SAMPLER
  const parentBased = wanted.startsWith('parentbased_')
  const root = ROOTS[parentBased ? wanted.slice('parentbased_'.length) : wanted]
  if (root === undefined) return { sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }), unknown: wanted }
  return { sampler: parentBased ? new ParentBasedSampler({ root: root(arg) }) : root(arg) }
}
