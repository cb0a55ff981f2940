/**
 * The rows of one round in the order they take turns: round r starts r − 1 places further on, so no
 * row is always the one measured first, right after the last round's heaviest load (1-based round).
 */
export const turnOrder = <T>(rows: readonly T[], round: number): T[] => {
  if (rows.length === 0) return []
  const shift = (((round - 1) % rows.length) + rows.length) % rows.length
  return [...rows.slice(shift), ...rows.slice(0, shift)]
}
