import { Command, InvalidArgumentError } from 'commander'
import { isAbsolute, relative, resolve } from 'node:path'
import { rewriteManifest } from './manifest.ts'
import { reloadModel } from './reload.ts'
import { newModel } from './scaffold.ts'
import { verifyPath } from './verify.ts'

const positiveInt = (value: string): number => {
  if (!/^[1-9][0-9]{0,8}$/.test(value)) throw new InvalidArgumentError('a positive integer')
  return Number(value)
}

const out = (lines: string[]) => process.stdout.write(lines.map((l) => `${l}\n`).join(''))

/** One line for the user, exit 1: these are the user's files at fault, not a crash. */
const fail = (err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
}

/** An action whose failure is that one line, never a stack trace. */
const guarded = <A extends unknown[]>(action: (...args: A) => Promise<void>) => async (...args: A): Promise<void> => {
  try {
    await action(...args)
  } catch (err) {
    fail(err)
  }
}

const defaultEdge = () => `http://127.0.0.1:${process.env.EDGE_PORT ?? 8787}`
const defaultBackend = () => `http://127.0.0.1:${process.env.BACKEND_PORT ?? 8000}`

/** `models new|manifest|verify|reload`: bring an ONNX model into a repository and get it served. */
export const modelsCommand = (): Command => {
  const models = new Command('models').description('bring your own ONNX model: scaffold, checksum, verify and reload repository entries (docs/bring-your-own-model.md)')

  models
    .command('new')
    .description('write <repository>/<name>/config.json from the graph\'s inputs and outputs, the version folder with model.onnx and its MANIFEST, and print the curl that calls it through the edge')
    .argument('<onnx-file>', 'the exported model')
    .requiredOption('--name <model>', 'model name: lower-case letters, digits, ".", "_" or "-"')
    .option('--repository <dir>', 'model repository root', './models')
    .option('--version <n>', 'version folder to write (an existing config.json is kept)', positiveInt, 1)
    .option('--features', 'also write a feature spec skeleton from the input width (and a postprocess for a probabilities output), so predict works')
    .option('--edge <url>', 'edge the printed curl calls', defaultEdge())
    .action(guarded(async (onnxFile: string, opts: { name: string; repository: string; version: number; features?: boolean; edge: string }) => {
      const made = await newModel({ onnxFile, name: opts.name, repository: opts.repository, version: opts.version, features: opts.features === true, edgeUrl: opts.edge })
      // Relative to here when inside it, as typed; absolute otherwise.
      const shown = (path: string) => {
        const near = relative(process.cwd(), resolve(path))
        return near === '' ? '.' : near.startsWith('..') || isAbsolute(near) ? resolve(path) : near
      }
      out([
        made.wroteConfig ? `wrote ${shown(made.modelDir)}/config.json` : `kept ${shown(made.modelDir)}/config.json (version ${opts.version} is added beside the others)`,
        `wrote ${shown(made.versionDir)}/model.onnx and MANIFEST`,
        `check it as the backend will: npx edge-infer models verify ${shown(made.modelDir)}`,
        `serve it: MODEL_REPOSITORY=${shown(opts.repository)} npm start, then (EDGE_INFER_KEY is the local API key npm start prints):`,
        ...made.curls.map((c) => `  ${c}`),
      ])
    }))

  models
    .command('manifest')
    .description('rewrite <version-dir>/MANIFEST from the files in it (sha256sum format, never listing MANIFEST itself)')
    .argument('<version-dir>', 'a version folder, e.g. models/my-model/1')
    .action(guarded(async (versionDir: string) => {
      const files = await rewriteManifest(versionDir)
      out([`wrote ${versionDir}/MANIFEST: ${files.join(', ')}`])
    }))

  models
    .command('verify')
    .description('run the checks the backend runs at load (config schema, MANIFEST, graph against config, a warm-up inference on CPU): one line per problem, exit 1 if any')
    .argument('<path>', 'a model folder or a whole repository')
    .action(guarded(async (path: string) => {
      const findings = await verifyPath(path)
      out(findings.map((f) => f.line))
      if (findings.some((f) => !f.ok)) process.exitCode = 1
    }))

  models
    .command('reload')
    .description('ask the backend to (re)load a model from its repository (POST /v2/repository/models/<model>/load, needs ADMIN_TOKEN)')
    .argument('<model>', 'model name')
    .option('--backend <url>', 'the backend (not the edge)', defaultBackend())
    .option('--token <token>', 'the backend\'s ADMIN_TOKEN (default: $ADMIN_TOKEN)')
    .action(async (model: string, opts: { backend: string; token?: string }) => {
      const result = await reloadModel(model, opts.backend, opts.token ?? process.env.ADMIN_TOKEN)
      out(result.lines)
      if (!result.ok) process.exitCode = 1
    })

  return models
}
