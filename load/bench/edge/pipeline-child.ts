import { positiveInt } from '../../harness/env.ts'
import { sampleCase, type PipelineCase } from './pipeline.ts'

/**
 * Child process of `bench:edge`: measures one in-process case (`PIPELINE_CASE`, JSON) with a JIT
 * that has seen no other case, and prints its samples as JSON on stdout.
 */
const c = JSON.parse(process.env.PIPELINE_CASE ?? '') as PipelineCase
const result = await sampleCase(c, { iterations: positiveInt('PIPELINE_ITERATIONS', 2_000), warmup: positiveInt('PIPELINE_WARMUP', 2_000) })
process.stdout.write(JSON.stringify(result))
