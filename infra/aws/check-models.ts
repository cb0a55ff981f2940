import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Repository } from '../../backend/repository/repository.ts'

/**
 * What would keep the baked model repository from serving in full: no models, a refused config,
 * a model without versions, or any version folder whose files do not match its MANIFEST. Every
 * version counts, selected or not: an image is immutable, so a bad folder is caught at build time.
 */
export const modelRepositoryProblems = async (root: string): Promise<string[]> => {
  const repository = new Repository(root)
  const names = await repository.names().catch((err: Error) => { throw new Error(`cannot read model repository ${root}: ${err.message}`) })
  if (names.length === 0) return [`${root}: no models (no <model>/config.json)`]
  const problems: string[] = []
  for (const name of names) {
    const model = await repository.read(name)
    if (!model) problems.push(`${name}: not a model name the repository accepts`)
    else if (model.error !== undefined) problems.push(`${name}: ${model.error}`)
    else if (model.versions.length === 0) problems.push(`${name}: no version folders`)
    else for (const v of model.versions) if (!v.verified) problems.push(`${name}/${v.version}: ${v.reason}`)
  }
  return problems
}

// `tsx infra/aws/check-models.ts <dir>` in the image build: a non-zero exit fails the build.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = resolve(process.argv[2] ?? 'models')
  const problems = await modelRepositoryProblems(root)
  if (problems.length > 0) {
    console.error(`model repository ${root} refused:\n  ${problems.join('\n  ')}`)
    process.exit(1)
  }
  console.log(`model repository ${root}: every version matches its MANIFEST`)
}
