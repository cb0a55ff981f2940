/**
 * Drift statistics over binned counts: the reference vector from `baseline.json` against the
 * counts of a live window, bin for bin. Pure functions with no dependencies, so the backend's
 * builder and the edge's rollout controller compute the same numbers.
 *
 * Degenerate input: when either vector sums to zero there is no distribution to compare, so every
 * test reports no evidence of drift (statistic 0, p-value 1) rather than NaN. The caller's
 * minimum-rows rule, not these functions, decides that such a window is `insufficient`.
 */

export interface KsResult {
  /** Largest gap between the two cumulative share curves, in [0, 1]. */
  d: number
  pValue: number
}

export interface ChiSquareResult {
  statistic: number
  /** Non-empty bins minus one; 0 when there is nothing to compare. */
  df: number
  pValue: number
}

const EPSILON = 2.220446049250313e-16
/** Lentz's stand-in for zero, so the continued fraction never divides by it. */
const TINY = 1e-300
const MAX_ITERATIONS = 10_000

/** Both totals, after checking the vectors describe the same bins with usable counts. */
const totals = (reference: readonly number[], observed: readonly number[]): [number, number] => {
  if (reference.length !== observed.length) {
    throw new RangeError(`count vectors differ in length: ${reference.length} reference bins, ${observed.length} observed`)
  }
  const sum = (counts: readonly number[], which: string): number => {
    let total = 0
    counts.forEach((c, i) => {
      if (!(c >= 0 && Number.isFinite(c))) throw new RangeError(`${which} count at bin ${i} is ${c}, not a finite count ≥ 0`)
      total += c
    })
    return total
  }
  return [sum(reference, 'reference'), sum(observed, 'observed')]
}

/**
 * Population stability index, Σ (o − r)·ln(o / r) over bin shares. Shares are floored at
 * `epsilon` (not renormalized) so a bin empty on one side adds a large finite term, not infinity.
 */
export const psi = (reference: readonly number[], observed: readonly number[], epsilon = 1e-4): number => {
  const [r, o] = totals(reference, observed)
  if (r === 0 || o === 0) return 0
  let sum = 0
  for (let i = 0; i < reference.length; i++) {
    const rs = Math.max(reference[i] / r, epsilon)
    const os = Math.max(observed[i] / o, epsilon)
    sum += (os - rs) * Math.log(os / rs)
  }
  return sum
}

/**
 * Jensen-Shannon distance, base 2: √JSD, 0 for equal shares and 1 for disjoint support.
 *
 * Per bin with s = p + q and t = (p − q)/s the divergence term is s·g(t)/(4 ln 2), where
 * g(t) = 2t·atanh(t) + log1p(−t²). Summing p·log(p/m) and q·log(q/m) directly cancels to the
 * square of a small difference and loses half the digits for nearly equal shares; g does not.
 */
export const jensenShannonDistance = (reference: readonly number[], observed: readonly number[]): number => {
  const [r, o] = totals(reference, observed)
  if (r === 0 || o === 0) return 0
  let divergence = 0
  for (let i = 0; i < reference.length; i++) {
    const p = reference[i] / r
    const q = observed[i] / o
    const s = p + q
    if (s === 0) continue
    const t = (p - q) / s
    const g = Math.abs(t) === 1 ? 2 * Math.LN2 : 2 * t * Math.atanh(t) + Math.log1p(-t * t)
    divergence += s * g
  }
  return Math.sqrt(Math.min(1, Math.max(0, divergence / (4 * Math.LN2))))
}

/**
 * Survival function of the Kolmogorov distribution, P(K > x), as `scipy.stats.kstwobign.sf`.
 * Below the cut-over the alternating series converges slowly and the Jacobi-theta form of the
 * CDF is used instead; above it the alternating series keeps tiny p-values to full relative
 * precision, which 1 − CDF would not.
 */
export const kolmogorovSf = (x: number): number => {
  if (Number.isNaN(x)) return Number.NaN
  if (x <= 0) return 1
  if (x < 0.82) {
    const w = -(Math.PI * Math.PI) / (8 * x * x)
    let cdf = 0
    for (let k = 1; k < MAX_ITERATIONS; k += 2) {
      const term = Math.exp(w * k * k)
      cdf += term
      if (term <= EPSILON * cdf) break
    }
    return 1 - (Math.sqrt(2 * Math.PI) / x) * cdf
  }
  let sf = 0
  for (let k = 1, sign = 1; k < MAX_ITERATIONS; k++, sign = -sign) {
    const term = Math.exp(-2 * k * k * x * x)
    sf += sign * term
    if (term <= EPSILON * sf) break
  }
  return Math.min(1, 2 * sf)
}

/**
 * Binned two-sample Kolmogorov-Smirnov. The bins coarsen the data, so D understates the raw
 * samples' D and the p-value is conservative; it confirms a PSI verdict rather than makes one.
 */
export const binnedKs = (reference: readonly number[], observed: readonly number[]): KsResult => {
  const [n, m] = totals(reference, observed)
  if (n === 0 || m === 0) return { d: 0, pValue: 1 }
  let cumulativeR = 0
  let cumulativeO = 0
  let d = 0
  for (let i = 0; i < reference.length; i++) {
    cumulativeR += reference[i]
    cumulativeO += observed[i]
    d = Math.max(d, Math.abs(cumulativeR / n - cumulativeO / m))
  }
  return { d, pValue: kolmogorovSf(Math.sqrt((n * m) / (n + m)) * d) }
}

/**
 * Chi-square test of homogeneity on the 2×k table of the two vectors, bins empty in both dropped,
 * without continuity correction (`scipy.stats.chi2_contingency(..., correction=False)`).
 * Σ (O − E)²/E over both rows simplifies per bin to (r·O − o·R)² / (R·O·(r + o)), which has no
 * cancellation between nearly equal observed and expected counts.
 */
export const chiSquare = (reference: readonly number[], observed: readonly number[]): ChiSquareResult => {
  const [rTotal, oTotal] = totals(reference, observed)
  if (rTotal === 0 || oTotal === 0) return { statistic: 0, df: 0, pValue: 1 }
  let statistic = 0
  let bins = 0
  for (let i = 0; i < reference.length; i++) {
    const column = reference[i] + observed[i]
    if (column === 0) continue
    bins++
    const gap = reference[i] * oTotal - observed[i] * rTotal
    statistic += (gap / (rTotal * oTotal)) * (gap / column)
  }
  const df = bins - 1
  if (df === 0) return { statistic: 0, df: 0, pValue: 1 }
  return { statistic, df, pValue: chiSquareSf(statistic, df) }
}

const LANCZOS_G = 7
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
]

/** ln Γ(x) for x > 0 (Lanczos, g = 7): about 1e-15 absolute, which is what the exponents below need. */
const logGamma = (x: number): number => {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x)
  const z = x - 1
  let series = LANCZOS[0]
  for (let i = 1; i < LANCZOS.length; i++) series += LANCZOS[i] / (z + i)
  const t = z + LANCZOS_G + 0.5
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(series)
}

/**
 * Regularized incomplete gamma functions [P(a, x), Q(a, x)]. Whichever of the two is the smaller
 * is computed directly (series for P below a + 1, Lentz's continued fraction for Q above) and
 * the other as its complement, so a tail probability keeps its relative precision.
 */
const incompleteGamma = (a: number, x: number): [number, number] => {
  if (x <= 0) return [0, 1]
  const prefix = Math.exp(a * Math.log(x) - x - logGamma(a))
  if (x < a + 1) {
    let term = 1 / a
    let sum = term
    for (let n = 1; n < MAX_ITERATIONS && Math.abs(term) > EPSILON * sum; n++) {
      term *= x / (a + n)
      sum += term
    }
    const p = Math.min(1, prefix * sum)
    return [p, 1 - p]
  }
  let b = x + 1 - a
  let c = 1 / TINY
  let d = 1 / b
  let h = d
  for (let n = 1; n < MAX_ITERATIONS; n++) {
    const an = -n * (n - a)
    b += 2
    d = an * d + b
    if (Math.abs(d) < TINY) d = TINY
    c = b + an / c
    if (Math.abs(c) < TINY) c = TINY
    d = 1 / d
    const step = d * c
    h *= step
    if (Math.abs(step - 1) <= EPSILON) break
  }
  const q = Math.min(1, prefix * h)
  return [1 - q, q]
}

const checkDf = (df: number): void => {
  if (!(df > 0 && Number.isFinite(df))) throw new RangeError(`degrees of freedom must be finite and > 0, got ${df}`)
}

/** P(χ²_df > x): the regularized upper incomplete gamma Q(df/2, x/2). */
export const chiSquareSf = (x: number, df: number): number => {
  checkDf(df)
  if (Number.isNaN(x)) return Number.NaN
  return incompleteGamma(df / 2, x / 2)[1]
}

const chiSquareDensity = (x: number, df: number): number => {
  const a = df / 2
  return Math.exp((a - 1) * Math.log(x) - x / 2 - a * Math.LN2 - logGamma(a))
}

/** Standard normal quantile to about 5e-4 (Abramowitz & Stegun 26.2.23): a starting point only. */
const roughNormalQuantile = (p: number): number => {
  const t = Math.sqrt(-2 * Math.log(Math.min(p, 1 - p)))
  const z = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308)))
  return p < 0.5 ? -z : z
}

/**
 * Inverse CDF of χ²_df. Starts from Wilson-Hilferty (or, where that goes negative in the far
 * lower tail, from P ≈ (x/2)^a / Γ(a + 1)), then Newton steps kept inside a shrinking bracket.
 * Above the median it solves Q(x) = 1 − p rather than P(x) = p, where P is too close to 1 to
 * resolve; either way the result is good to about 1e-13 relative.
 */
export const chiSquareQuantile = (p: number, df: number): number => {
  checkDf(df)
  if (!(p >= 0 && p <= 1)) throw new RangeError(`probability must lie in [0, 1], got ${p}`)
  if (p === 0) return 0
  if (p === 1) return Number.POSITIVE_INFINITY
  const a = df / 2
  const upper = p > 0.5
  // Increasing in x either way, so a negative residual means x is too small.
  const residual = (x: number): number => {
    const [lower, tail] = incompleteGamma(a, x / 2)
    return upper ? 1 - p - tail : lower - p
  }
  const h = 2 / (9 * df)
  const wilsonHilferty = df * (1 - h + roughNormalQuantile(p) * Math.sqrt(h)) ** 3
  let x = wilsonHilferty > 0 ? wilsonHilferty : 2 * Math.exp((Math.log(p) + logGamma(a + 1)) / a)
  let lo = 0
  let hi = Number.POSITIVE_INFINITY
  for (let i = 0; i < 200; i++) {
    const f = residual(x)
    if (f === 0) return x
    if (f < 0) lo = x
    else hi = x
    let next = x - f / chiSquareDensity(x, df)
    if (!(next > lo && next < hi)) next = Number.isFinite(hi) ? (lo + hi) / 2 : 2 * x
    if (Math.abs(next - x) <= 4 * EPSILON * x) return next
    x = next
  }
  return x
}

/**
 * The p-quantile of PSI between two samples of `n` and `m` rows over `bins` bins when nothing has
 * drifted: n·m/(n + m) · PSI is asymptotically χ² with bins − 1 degrees of freedom (PSI is the
 * symmetrized KL divergence, whose second-order term is the chi-square statistic).
 */
export const noDriftPsiQuantile = (p: number, bins: number, n: number, m: number): number =>
  bins < 2 ? 0 : (1 / n + 1 / m) * chiSquareQuantile(p, bins - 1)

/** Size, mean and standard deviation of one sample. */
export interface Moments {
  n: number
  mean: number
  sd: number
}

export interface MeanShift {
  /** Standardized mean difference: (observed mean − reference mean) / reference sd. */
  smd: number
  /** Its standard error, √(s_r²/N + s_o²/n) / s_r. */
  se: number
  /** smd / se: about N(0, 1) when nothing has drifted. */
  z: number
}

/**
 * The location shift of `observed` against `reference` in reference standard deviations, with its
 * sampling error from both sample sizes. Undefined when it cannot be told: a constant reference
 * (sd 0) or fewer than 2 values on either side.
 */
export const meanShift = (reference: Moments, observed: Moments): MeanShift | undefined => {
  if (reference.n < 2 || observed.n < 2 || !(reference.sd > 0)) return undefined
  const smd = (observed.mean - reference.mean) / reference.sd
  const se = Math.sqrt(reference.sd ** 2 / reference.n + observed.sd ** 2 / observed.n) / reference.sd
  return { smd, se, z: smd / se }
}

/**
 * Wasserstein-1 distance between two binned samples, each bin's mass spread evenly over it, in the
 * units of `bounds` (the `counts.length + 1` ascending bin boundaries). Between two boundaries the
 * gap between the cumulative shares is linear, so each bin adds the exact integral of its |gap|.
 */
export const binnedWasserstein = (bounds: readonly number[], reference: readonly number[], observed: readonly number[]): number => {
  const [r, o] = totals(reference, observed)
  if (bounds.length !== reference.length + 1) throw new RangeError(`${bounds.length} bounds for ${reference.length} bins; expected ${reference.length + 1}`)
  if (r === 0 || o === 0) return 0
  let distance = 0
  let before = 0
  for (let i = 0; i < reference.length; i++) {
    const after = before + reference[i] / r - observed[i] / o
    const width = bounds[i + 1] - bounds[i]
    const a = Math.abs(before)
    const b = Math.abs(after)
    // Same sign: a trapezoid; a sign change: two triangles meeting where the gap is 0.
    if (a + b > 0) distance += width * (before * after >= 0 ? (a + b) / 2 : (a * a + b * b) / (2 * (a + b)))
    before = after
  }
  return distance
}

/**
 * Bin of `value`: the number of edges at or below it, so a value on an edge goes to the upper bin.
 * The one bin rule of both tiers: the backend counts features, predictions and latencies with it,
 * the edge its served scores, the model builder the baseline.
 */
export const binIndex = (edges: readonly number[], value: number): number => {
  let lo = 0
  let hi = edges.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (edges[mid] <= value) lo = mid + 1
    else hi = mid
  }
  return lo
}

/**
 * Total variation distance between the two vectors' shares, ½ Σ |p − q|: the share of rows that
 * would have to change cell for one distribution to become the other, in [0, 1]. It is the
 * categorical effect size because, unlike Cramér's V of the 2×k table, it does not depend on the
 * two sample sizes (V = √(χ² / (n + m)) shrinks as the reference grows, for the same shift).
 */
export const totalVariation = (reference: readonly number[], observed: readonly number[]): number => {
  const [r, o] = totals(reference, observed)
  if (r === 0 || o === 0) return 0
  let distance = 0
  for (let i = 0; i < reference.length; i++) distance += Math.abs(reference[i] / r - observed[i] / o)
  return distance / 2
}

/** P(|Z| ≥ z) for a standard normal Z: how often an undrifted window reaches |z| on the z gate. */
export const twoSidedNormalP = (z: number): number => chiSquareSf(z * z, 1)

/** ∫ √(u(1 − u)) du, the antiderivative used per bin below. */
const bridgeSdIntegral = (u: number): number => ((2 * u - 1) * Math.sqrt(u * (1 - u))) / 4 + Math.asin(2 * u - 1) / 8

/** Points per bin at which the variance's double integral is taken (midpoint rule). */
const VARIANCE_POINTS_PER_BIN = 8

export interface WassersteinNull {
  /** Mean of L = ∫ |B(F(x))| dx, in the units of the bounds. */
  mean: number
  /** Its standard deviation. */
  sd: number
}

/**
 * How Wasserstein-1 between a window and the `reference` bins (mass even within each bin, as
 * `binnedWasserstein`) spreads when nothing has drifted: √(nm/(n + m))·W1 tends to
 * L = ∫ |B(F(x))| dx for a Brownian bridge B (del Barrio, Giné and Matrán 1999). Its mean is
 * √(2/π)·∫ √(F(1 − F)) dx, exact per bin; its variance ∫∫ Cov(|B(F(x))|, |B(F(y))|) dx dy, where for
 * s = F(x) ≤ t = F(y) the two are normal with sds σ_s, σ_t and correlation ρ = s(1 − t)/(σ_s σ_t),
 * so Cov = (2/π)·σ_s σ_t·(√(1 − ρ²) + ρ·asin ρ − 1), summed on a grid of points per bin.
 */
export const noDriftWasserstein = (bounds: readonly number[], reference: readonly number[]): WassersteinNull => {
  const [m] = totals(reference, reference)
  if (bounds.length !== reference.length + 1) throw new RangeError(`${bounds.length} bounds for ${reference.length} bins; expected ${reference.length + 1}`)
  if (m === 0) return { mean: 0, sd: 0 }
  let spread = 0
  const points: Array<{ f: number; sd: number; weight: number }> = []
  let before = 0
  for (let i = 0; i < reference.length; i++) {
    const after = Math.min(1, before + reference[i] / m)
    const width = bounds[i + 1] - bounds[i]
    spread += after > before ? (width * (bridgeSdIntegral(after) - bridgeSdIntegral(before))) / (after - before) : width * Math.sqrt(before * (1 - before))
    for (let k = 0; k < VARIANCE_POINTS_PER_BIN; k++) {
      const f = before + ((k + 0.5) / VARIANCE_POINTS_PER_BIN) * (after - before)
      points.push({ f, sd: Math.sqrt(f * (1 - f)), weight: width / VARIANCE_POINTS_PER_BIN })
    }
    before = after
  }
  let variance = 0
  for (let i = 0; i < points.length; i++) {
    const p = points[i]
    if (p.sd === 0) continue
    for (let j = i; j < points.length; j++) {
      const q = points[j]
      if (q.sd === 0) continue
      // Points are in ascending F, so p.f ≤ q.f.
      const rho = Math.min(1, (p.f * (1 - q.f)) / (p.sd * q.sd))
      const cov = (2 / Math.PI) * p.sd * q.sd * (Math.sqrt(1 - rho * rho) + rho * Math.asin(rho) - 1)
      variance += (i === j ? 1 : 2) * p.weight * q.weight * cov
    }
  }
  return { mean: Math.sqrt(2 / Math.PI) * spread, sd: Math.sqrt(Math.max(0, variance)) }
}

/**
 * Where Wasserstein-1 of an undrifted window of `n` rows against `m` reference rows stays except
 * with probability `p`, in the units of the bounds. L is positive and right-skewed, so its upper
 * tail is taken from the gamma law with L's mean and variance (a scaled χ², Satterthwaite), not
 * from the normal's, which would put the level too low.
 */
export const noDriftWassersteinLevel = (spread: WassersteinNull, n: number, m: number, p: number): number => {
  if (!(n > 0 && m > 0) || !(spread.mean > 0)) return Number.POSITIVE_INFINITY
  const scale = Math.sqrt(1 / n + 1 / m)
  if (!(spread.sd > 0)) return scale * spread.mean
  // L ≈ a·χ²_k with a·k = mean and 2a²k = variance.
  const a = spread.sd ** 2 / (2 * spread.mean)
  const k = (2 * spread.mean ** 2) / spread.sd ** 2
  return scale * a * chiSquareQuantile(1 - p, k)
}
