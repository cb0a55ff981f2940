import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildComputeBoundModel, type ComputeBoundOptions } from '../../../tools/training/compute-bound.ts'

export const DEMO_REPOSITORY = fileURLToPath(new URL('../../../models', import.meta.url))

export interface FixtureRepository {
  root: string
  /** Adds a small untrained model and lets the test adjust its config. */
  addModel(name: string, options?: ComputeBoundOptions & { config?: (config: Record<string, unknown>) => void }): Promise<void>
  editConfig(name: string, edit: (config: Record<string, unknown>) => void): Promise<void>
  remove(): Promise<void>
}

/** A temporary model repository: a copy of the demo models that a test may change or break. */
export const createFixtureRepository = async ({ withDemo = true } = {}): Promise<FixtureRepository> => {
  const root = await mkdtemp(join(tmpdir(), 'edge-infer-repo-'))
  if (withDemo) await cp(DEMO_REPOSITORY, root, { recursive: true })
  const editConfig = async (name: string, edit: (config: Record<string, unknown>) => void) => {
    const path = join(root, name, 'config.json')
    const config = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>
    edit(config)
    await writeFile(path, JSON.stringify(config, null, 2))
  }
  return {
    root,
    async addModel(name, { config, ...options } = {}) {
      await buildComputeBoundModel(root, { name, inputs: 4, hidden: [8], outputs: 2, ...options })
      if (config) await editConfig(name, config)
    },
    editConfig,
    remove: () => rm(root, { recursive: true, force: true }),
  }
}
