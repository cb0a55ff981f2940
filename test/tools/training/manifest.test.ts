import { describe, expect, it } from 'vitest'
import { formatManifest } from '../../../tools/training/manifest.ts'

describe('formatManifest', () => {
  it('writes sha256sum lines sorted by code unit, with a trailing newline', () => {
    const text = formatManifest({ 'model.onnx': Buffer.from('abc'), 'Z.json': Buffer.from(''), 'a.json': Buffer.from('abc') })
    expect(text).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  Z.json\n' +
        'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  a.json\n' +
        'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  model.onnx\n',
    )
  })
})
