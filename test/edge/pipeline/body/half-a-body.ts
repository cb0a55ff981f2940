/** A request body that sends `first`, then fails as a connection dropped by the client does. */
export const halfABody = (first: string): ReadableStream<Uint8Array> => {
  let sent = false
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent) return controller.error(new Error('Network connection lost.'))
      sent = true
      controller.enqueue(new TextEncoder().encode(first))
    },
  })
}
