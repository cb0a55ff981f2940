import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'

export const BASELINE_FILE = 'baseline.json'

const ascending = (edges: readonly number[]) => edges.every((e, i) => i === 0 || edges[i - 1] < e)
export const edges = z.array(z.number()).refine(ascending, 'edges must be strictly ascending')

/**
 * The part of `baseline.json` (see baseline-format.ts) that fixes the bins. Other fields
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

/**
 * `baseline.json` of a version folder checked against `schema` (each reader checks the part it
 * uses); undefined when the folder ships none, an error saying `what` is wrong otherwise.
 */
export const parseBaselineFile = async <T>(dir: string, schema: z.ZodType<T>, invalid: string): Promise<T | undefined> => {
  let text: string
  try {
    text = await readFile(join(dir, BASELINE_FILE), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  const parsed = schema.safeParse(JSON.parse(text))
  if (!parsed.success) throw new Error(`${BASELINE_FILE} ${invalid}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
  return parsed.data
}

/** The bins of a version folder's baseline; undefined when it ships none, an error when it is malformed. */
export const readBaseline = (dir: string): Promise<DriftBaseline | undefined> => parseBaselineFile(dir, driftBaseline, 'is invalid')
