import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'

export const BASELINE_FILE = 'baseline.json'

const ascending = (edges: readonly number[]) => edges.every((e, i) => i === 0 || edges[i - 1] < e)
const edges = z.array(z.number()).refine(ascending, 'edges must be strictly ascending')

/**
 * The part of `baseline.json` (backend/training/baseline.ts) that fixes the bins. Other fields
 * (reference counts, thresholds) belong to the statistics and are not read here, so the file
 * can grow without breaking the counters.
 */
export const driftBaseline = z.object({
  features: z.array(
    z.discriminatedUnion('kind', [
      z.object({ name: z.string(), kind: z.literal('numeric'), edges, min: z.number(), max: z.number() }),
      z.object({ name: z.string(), kind: z.literal('categorical'), categories: z.array(z.string()) }),
    ]),
  ),
  prediction: z.object({ edges }),
})

export type DriftBaseline = z.infer<typeof driftBaseline>

/** The baseline of a version folder; undefined when it ships none, an error when it is malformed. */
export const readBaseline = async (dir: string): Promise<DriftBaseline | undefined> => {
  let text: string
  try {
    text = await readFile(join(dir, BASELINE_FILE), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  const parsed = driftBaseline.safeParse(JSON.parse(text))
  if (!parsed.success) throw new Error(`${BASELINE_FILE} is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
  return parsed.data
}
