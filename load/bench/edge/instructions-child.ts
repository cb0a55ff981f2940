import { positiveInt } from '../../harness/env.ts'
import { sampleCase, type PipelineCase } from './pipeline.ts'

/**
 * Child process of `bench:edge`'s instructions section, run under `instructions.sh` (valgrind):
 * builds the app of the one-instance warm-cache row (`INSTRUCTIONS_APP=pipeline`) or the floor
 * row (`floor`) exactly as the in-process rows do, sends `INSTRUCTIONS_WARMUP` untimed requests,
 * then exactly `INSTRUCTIONS_REQUESTS` more, and exits. Loading, building and warming up are the
 * same in every run, so two runs with different request counts differ only by the extra requests.
 */
const app = process.env.INSTRUCTIONS_APP
if (app !== 'pipeline' && app !== 'floor') throw new Error(`INSTRUCTIONS_APP must be pipeline or floor, got "${app ?? ''}"`)
const c: PipelineCase = { instances: 1, cache: 'warm', ...(app === 'floor' ? { floor: true } : {}) }
await sampleCase(c, { iterations: positiveInt('INSTRUCTIONS_REQUESTS', 200), warmup: positiveInt('INSTRUCTIONS_WARMUP', 500) })
