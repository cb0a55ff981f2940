import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { initLayers } from '../../../tools/training/mlp.ts'
import { networkToOnnx } from '../../../tools/training/onnx-writer.ts'
import { createRandom } from '../../../tools/training/random.ts'

/** A small ONNX classifier as a user's exporter would hand it over: [batch, inputs] in, softmax [batch, outputs] out. */
export const onnxClassifier = (inputs = 5, outputs = 3, names = { input: 'x', output: 'probabilities' }): Uint8Array =>
  networkToOnnx({ layers: initLayers([inputs, 8, outputs], createRandom(7)) }, { name: 'byom', ...names })

/** A temp folder with `model.onnx` written into it; `remove` deletes it. */
export const tempWithModel = async (bytes = onnxClassifier()) => {
  const dir = await mkdtemp(join(tmpdir(), 'byom-'))
  const onnxFile = join(dir, 'model.onnx')
  await writeFile(onnxFile, bytes)
  return { dir, onnxFile, remove: () => rm(dir, { recursive: true, force: true }) }
}
