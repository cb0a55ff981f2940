import { HISTORY_CAP, type HistoryEntry, type HistoryStore } from './history-store.ts'

export class MemoryHistoryStore implements HistoryStore {
  private readonly entries = new Map<string, HistoryEntry[]>()

  constructor(private readonly cap = HISTORY_CAP) {}

  async append(entry: HistoryEntry): Promise<void> {
    const list = this.entries.get(entry.model) ?? []
    list.unshift(entry)
    list.length = Math.min(list.length, this.cap)
    this.entries.set(entry.model, list)
  }

  async list(model: string, limit: number): Promise<HistoryEntry[]> {
    return (this.entries.get(model) ?? []).slice(0, limit)
  }
}
