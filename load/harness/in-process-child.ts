import { measureCeiling, type CeilingOptions } from './in-process.ts'

/** CeilingOptions as JSON carries them: the row as plain numbers. */
export type CeilingJob = Omit<CeilingOptions, 'row'> & { row: number[] }

/**
 * Child process of `bench:backend`: measures one C(b) (`CEILING_JOB`, JSON) on the Node that runs
 * it, so each runtime's ceiling is its own, and prints the CeilingResult as JSON on stdout.
 */
const { row, ...options } = JSON.parse(process.env.CEILING_JOB ?? '') as CeilingJob
process.stdout.write(JSON.stringify(await measureCeiling({ ...options, row: Float32Array.from(row) })))
