import { readFile, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { modelConfig, type ModelConfig } from './model-config.ts'
import { HashCache, verifyVersion } from './manifest.ts'

export const CONFIG_FILE = 'config.json'
export const MODEL_FILE = 'model.onnx'

/** A version folder on disk, as the policy and the manifest judge it. */
export interface VersionOnDisk {
  version: number
  path: string
  modelPath: string
  /** Whether the version policy selects it. */
  selected: boolean
  /** Whether every file matches the MANIFEST. */
  verified: boolean
  reason: string
  /** Identity of the version's contents (sha256 of its MANIFEST). */
  digest: string
  /** sha256 of model.onnx as the MANIFEST states it: what every session is loaded from. */
  modelSha256: string
  sizeBytes: number
}

export type ModelOnDisk =
  | { name: string; path: string; config: ModelConfig; versions: VersionOnDisk[]; error?: undefined }
  | { name: string; path: string; config?: undefined; versions: VersionOnDisk[]; error: string }

/** Applies a version policy to the versions present, newest first. */
export const selectVersions = (policy: ModelConfig['version_policy'], present: readonly number[]): Set<number> => {
  const newestFirst = [...present].sort((a, b) => b - a)
  if ('latest' in policy) return new Set(newestFirst.slice(0, policy.latest))
  if ('all' in policy) return new Set(newestFirst)
  return new Set(newestFirst.filter((v) => policy.specific.includes(v)))
}

/** Triton's config.pbtxt fields written as JSON: the most common first config, refused field by field. */
const tritonShaped = (raw: unknown): boolean =>
  typeof raw === 'object' && raw !== null && ('input' in raw || 'output' in raw || (raw as { platform?: unknown }).platform === 'onnxruntime_onnx')

const TRITON_HINT = ' (this is Triton\'s config.pbtxt shape; here: "platform": "onnxruntime", "inputs"/"outputs" of {"name", "datatype": "FP32", "dims"}; see docs/bring-your-own-model.md)'

const readConfig = async (dir: string, folderName: string): Promise<ModelConfig> => {
  let raw: unknown
  try {
    raw = JSON.parse(await readFile(join(dir, CONFIG_FILE), 'utf8'))
  } catch (err) {
    throw new Error(`${CONFIG_FILE}: ${(err as Error).message}`)
  }
  const parsed = modelConfig.safeParse(raw)
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    throw new Error(`${CONFIG_FILE} is invalid: ${issues.join('; ')}${tritonShaped(raw) ? TRITON_HINT : ''}`)
  }
  if (parsed.data.name !== folderName) throw new Error(`${CONFIG_FILE}: name "${parsed.data.name}" does not match folder "${folderName}"`)
  return parsed.data
}

/**
 * Reads the model repository from disk: Triton's layout, `<model>/config.json` and numeric
 * version folders. Never throws for one bad model; the fault is reported with the model.
 */
const MODEL_NAME = /^[a-z0-9][a-z0-9._-]*$/

const configExists = (dir: string): Promise<boolean> => stat(join(dir, CONFIG_FILE)).then(() => true, () => false)

export class Repository {
  /** Files already hashed: reading the repository again hashes only what changed. */
  private readonly hashes = new HashCache()

  constructor(readonly root: string) {}

  async names(): Promise<string[]> {
    const entries = await readdir(this.root, { withFileTypes: true })
    const names: string[] = []
    for (const entry of entries) {
      if (entry.isDirectory() && (await configExists(join(this.root, entry.name)))) names.push(entry.name)
    }
    return names.sort()
  }

  /** Whether `name` is a model of this repository: a stat, no reading or hashing. */
  async has(name: string): Promise<boolean> {
    return MODEL_NAME.test(name) && !name.includes('..') && configExists(join(this.root, name))
  }

  /** Whether `name` is a folder of the repository without config.json (what a model owner forgot, not an unknown name). */
  async lacksConfig(name: string): Promise<boolean> {
    if (!MODEL_NAME.test(name) || name.includes('..')) return false
    const isDir = await stat(join(this.root, name)).then((s) => s.isDirectory(), () => false)
    return isDir && !(await configExists(join(this.root, name)))
  }

  /** The version folders present, ascending, without verifying them. */
  async versionFolders(name: string): Promise<number[]> {
    const entries = await readdir(join(this.root, name), { withFileTypes: true })
    return entries.filter((e) => e.isDirectory() && /^[1-9][0-9]*$/.test(e.name)).map((e) => Number(e.name)).sort((a, b) => a - b)
  }

  /** The model's config, or undefined when it is missing or invalid (`read` says why). */
  async config(name: string): Promise<ModelConfig | undefined> {
    if (!(await this.has(name))) return undefined
    return readConfig(join(this.root, name), name).catch(() => undefined)
  }

  /** The versions the policy selects among the folders present (no hashing); undefined without a valid config. */
  async selected(name: string): Promise<Set<number> | undefined> {
    const config = await this.config(name)
    return config && selectVersions(config.version_policy, await this.versionFolders(name))
  }

  /** Config and every version folder, each checked against its MANIFEST (hashes the files not hashed before, or changed since). */
  async read(name: string): Promise<ModelOnDisk | undefined> {
    if (!(await this.has(name))) return undefined
    const path = join(this.root, name)
    let config: ModelConfig
    try {
      config = await readConfig(path, name)
    } catch (err) {
      return { name, path, versions: [], error: (err as Error).message }
    }
    const folders = await this.versionFolders(name)
    const selected = selectVersions(config.version_policy, folders)
    const versions = await Promise.all(
      folders.map(async (version): Promise<VersionOnDisk> => {
        const dir = join(path, String(version))
        const modelPath = join(dir, MODEL_FILE)
        const check = await verifyVersion(dir, this.hashes)
        const sizeBytes = await stat(modelPath).then((s) => s.size, () => 0)
        const missingModel = check.ok && sizeBytes === 0 ? `${MODEL_FILE} is missing or empty` : ''
        return {
          version, path: dir, modelPath, selected: selected.has(version),
          verified: check.ok && !missingModel, reason: check.reason || missingModel, digest: check.digest, modelSha256: check.sums.get(MODEL_FILE) ?? '', sizeBytes,
        }
      }),
    )
    return { name, path, config, versions }
  }
}
