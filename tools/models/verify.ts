import { readdir, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { startExecutor } from '../../backend/loader/placement.ts'
import { CONFIG_FILE, Repository } from '../../backend/repository/repository.ts'

/** One finding: a problem that would keep a version (or the model) from serving, or a version that passed. */
export interface Finding {
  ok: boolean
  /** `<model>[ version <n>]: <what>`: one line, as printed. */
  line: string
}

const isDir = (path: string): Promise<boolean> => stat(path).then((s) => s.isDirectory(), () => false)
const isFile = (path: string): Promise<boolean> => stat(path).then((s) => s.isFile(), () => false)

/**
 * What the backend would do with one model at load, with its own code: the config schema and the
 * name check (Repository.read), every version folder against its MANIFEST, and for each version
 * the policy selects, sessions started and checked against the config and a warm-up of every
 * batch size (startExecutor), on CPU in this process.
 */
const verifyModel = async (repository: Repository, name: string): Promise<Finding[]> => {
  const dir = join(repository.root, name)
  if (!(await isFile(join(dir, CONFIG_FILE)))) {
    const pbtxt = (await isFile(join(dir, 'config.pbtxt'))) ? ' (config.pbtxt is Triton\'s; write config.json, see docs/bring-your-own-model.md)' : ''
    return [{ ok: false, line: `${name}: no ${CONFIG_FILE}, so the backend does not see this folder as a model${pbtxt}` }]
  }
  const disk = await repository.read(name)
  if (!disk) return [{ ok: false, line: `${name}: not a model name the backend accepts (lower-case letters, digits, ".", "_" or "-")` }]
  if (disk.error !== undefined) return [{ ok: false, line: `${name}: ${disk.error}` }]
  if (disk.versions.length === 0) return [{ ok: false, line: `${name}: no version folder (1/, 2/, … holding ${'model.onnx'} and MANIFEST)` }]
  const findings: Finding[] = []
  for (const version of disk.versions) {
    const at = `${name} version ${version.version}`
    if (!version.verified) {
      findings.push({ ok: false, line: `${at}: ${version.reason}` })
      continue
    }
    if (!version.selected) {
      findings.push({ ok: true, line: `ok ${at}: MANIFEST matches; not selected by version_policy, so not loaded` })
      continue
    }
    try {
      // CPU only and one session: what is checked is the graph, not the host's GPUs.
      const config = { ...disk.config, execution_providers: ['cpu' as const], instance_count: 1 }
      const executor = await startExecutor(name, config, version, { placement: 'main' })
      await executor.close()
      findings.push({ ok: true, line: `ok ${at}: config, MANIFEST, graph against config, warm-up` })
    } catch (err) {
      findings.push({ ok: false, line: `${at}: ${(err as Error).message.split('\n')[0]}` })
    }
  }
  return findings
}

/**
 * Verifies a model folder (it holds config.json, or is inside a repository and named like one) or
 * every folder of a repository.
 */
export const verifyPath = async (path: string): Promise<Finding[]> => {
  const target = resolve(path)
  if (!(await isDir(target))) return [{ ok: false, line: `${path}: not a folder` }]
  const entries = await readdir(target, { withFileTypes: true })
  const looksLikeModel = entries.some((e) => (e.isFile() && (e.name === CONFIG_FILE || e.name === 'config.pbtxt')) || (e.isDirectory() && /^[1-9][0-9]*$/.test(e.name)))
  if (looksLikeModel) return verifyModel(new Repository(dirname(target)), basename(target))
  const repository = new Repository(target)
  const folders = entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name).toSorted()
  if (folders.length === 0) return [{ ok: false, line: `${path}: no model folders` }]
  const findings: Finding[] = []
  for (const name of folders) findings.push(...(await verifyModel(repository, name)))
  return findings
}
