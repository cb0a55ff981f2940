import type { Replica } from './replica.ts'

/** The kinds of simulation event, as plain numbers: the event loop switches on them millions of times. */
export const COMPLETE = 0
export const TIMER = 1
export const READY_UP = 2
export const SCRAPE = 3
export const SYNC = 4
export const TICK = 5

export interface SimEvent {
  at: number
  kind: number
  replica: Replica | undefined
  rows: number
}

/** A binary min-heap of events by time. */
export class EventQueue {
  private items: SimEvent[] = []

  peekAt(): number {
    return this.items.length > 0 ? this.items[0].at : Infinity
  }

  push(event: SimEvent): void {
    const items = this.items
    let i = items.push(event) - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (items[parent].at <= event.at) break
      items[i] = items[parent]
      i = parent
    }
    items[i] = event
  }

  pop(): SimEvent {
    const items = this.items
    const top = items[0]
    const last = items.pop()!
    if (items.length > 0) {
      let i = 0
      for (;;) {
        const left = 2 * i + 1
        if (left >= items.length) break
        const right = left + 1
        const child = right < items.length && items[right].at < items[left].at ? right : left
        if (items[child].at >= last.at) break
        items[i] = items[child]
        i = child
      }
      items[i] = last
    }
    return top
  }
}
