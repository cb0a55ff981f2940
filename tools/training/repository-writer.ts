import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { modelConfig, type ModelConfigInput } from '../../backend/repository/model-config.ts'
import { MANIFEST_FILE, formatManifest } from './manifest.ts'

/** Batching settings shared by the built models: 2 ms to gather company, batches of 32 or 64. */
export const DYNAMIC_BATCHING = {
  max_queue_delay_us: 2_000,
  preferred_batch_sizes: [32, 64],
  max_queue_size: 4_096,
  default_timeout_us: 0,
} satisfies ModelConfigInput['dynamic_batching']

/** Pretty JSON with a trailing newline: stable bytes, readable diffs. */
export const jsonBytes = (value: unknown): Buffer => Buffer.from(`${JSON.stringify(value, null, 2)}\n`)

/**
 * Writes `<repository>/<name>/config.json` as authored (defaults stay implicit), after checking
 * that the server's own schema accepts it.
 */
export const writeModelConfig = async (repositoryDir: string, config: ModelConfigInput): Promise<void> => {
  const parsed = modelConfig.safeParse(config)
  if (!parsed.success) throw new Error(`config for "${config.name}" is invalid: ${parsed.error.message}`)
  const dir = join(repositoryDir, config.name)
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'config.json'), jsonBytes(config))
}

/** Writes a version folder's files and the MANIFEST that vouches for them. */
export const writeModelVersion = async (
  repositoryDir: string, name: string, version: number, files: Readonly<Record<string, Uint8Array>>,
): Promise<void> => {
  if (MANIFEST_FILE in files) throw new Error(`${MANIFEST_FILE} is written from the other files, not passed in`)
  const dir = join(repositoryDir, name, String(version))
  await mkdir(dir, { recursive: true })
  for (const [file, bytes] of Object.entries(files)) await writeFile(join(dir, file), bytes)
  await writeFile(join(dir, MANIFEST_FILE), formatManifest(files))
}
