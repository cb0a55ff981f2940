import { describe, expect, it } from 'vitest'
import { BodyAborted, BodyTooLarge, readBodyText } from '../../../../edge/pipeline/body/read-text.ts'
import { halfABody } from './half-a-body.ts'

/** A request whose body arrives in the given chunks, counting how many the reader pulled. */
const streamed = (chunks: Uint8Array[]) => {
  let pulled = 0
  let cancelled = false
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled === chunks.length) return controller.close()
      controller.enqueue(chunks[pulled++])
    },
    cancel() {
      cancelled = true
    },
  })
  const request = new Request('http://edge.test/', { method: 'POST', body, duplex: 'half' } as RequestInit)
  return { request, pulled: () => pulled, cancelled: () => cancelled }
}

const bytes = (text: string) => new TextEncoder().encode(text)

describe('readBodyText', () => {
  it('joins the chunks of a streamed body, even a character split across two', async () => {
    const euro = bytes('{"v":"€"}')
    const { request } = streamed([euro.slice(0, 7), euro.slice(7)])
    expect(await readBodyText(request, 1024)).toBe('{"v":"€"}')
  })

  it('drops a leading BOM and replaces bytes that are not UTF-8, as Request.text() does', async () => {
    const { request } = streamed([new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0xff, 0x7d])])
    const text = await readBodyText(request, 1024)
    expect(text).toBe('{\uFFFD}')
    expect(text).toBe(await new Request('http://edge.test/', { method: 'POST', body: new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0xff, 0x7d]) }).text())
  })

  it('answers an empty string for a request without a body', async () => {
    expect(await readBodyText(new Request('http://edge.test/'), 10)).toBe('')
  })

  it('accepts a body of exactly the limit', async () => {
    const { request } = streamed([bytes('12345'), bytes('67890')])
    expect(await readBodyText(request, 10)).toBe('1234567890')
  })

  it('refuses a body past the limit, keeps nothing past it and leaves the rest unread for discardUnreadBody', async () => {
    const { request, pulled, cancelled } = streamed(Array.from({ length: 8 }, () => bytes('x'.repeat(10))))
    const refused = await readBodyText(request, 25).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(BodyTooLarge)
    expect((refused as BodyTooLarge).message).toBe('request body exceeds 25 bytes')
    // Three chunks reach past 25 bytes; the stream may have pulled one ahead.
    expect(pulled()).toBeLessThanOrEqual(4)
    expect(cancelled()).toBe(false)
    expect(request.body!.locked).toBe(false)
  })

  it('reads a body with a declared length in one go, and still refuses one longer than the limit', async () => {
    const declared = (body: string, length: number) =>
      new Request('http://edge.test/', { method: 'POST', body: bytes(body), headers: { 'content-length': String(length) } })
    expect(await readBodyText(declared('\uFEFF{"v":"€"}', 14), 1024)).toBe('{"v":"€"}')
    // A Request built in-process may declare less than it carries; the runtime's framing would not.
    expect(await readBodyText(declared('x'.repeat(40), 10), 25).catch((err: unknown) => err)).toBeInstanceOf(BodyTooLarge)
  })

  it('says the client went away when the body stream fails mid-way', async () => {
    const failing = () => halfABody('{"half":')
    const chunked = new Request('http://edge.test/', { method: 'POST', body: failing(), duplex: 'half' } as RequestInit)
    expect(await readBodyText(chunked, 1024).catch((err: unknown) => err)).toBeInstanceOf(BodyAborted)
    const declared = new Request('http://edge.test/', { method: 'POST', body: failing(), duplex: 'half', headers: { 'content-length': '100' } } as RequestInit)
    expect(await readBodyText(declared, 1024).catch((err: unknown) => err)).toBeInstanceOf(BodyAborted)
  })
})
