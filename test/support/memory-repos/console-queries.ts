import type { ConsoleConversation, ConsoleQueries } from '../../../adapters/store/ports/console-queries.js';
import type { Tables } from './tables.js';

export class MemoryConsoleQueries implements ConsoleQueries {
  constructor(private readonly t: Tables) {}

  async recentConversations(limit = 30): Promise<ConsoleConversation[]> {
    const turns = [...this.t.turns.values()];
    return [...this.t.conversations.values()]
      .sort((a, b) => b.updated_at.getTime() - a.updated_at.getTime())
      .slice(0, limit)
      .map((c) => {
        const own = turns.filter((t) => t.conversation_id === c.id).sort((a, b) => b.seq - a.seq);
        return { id: c.id, key: c.key, channel: c.channel, updated_at: c.updated_at, status: own[0]?.status ?? null, turns: own.length };
      });
  }

  async turnLatencies(limit = 60): Promise<Array<{ ms: number; finished_at: Date }>> {
    return [...this.t.turns.values()]
      .filter((t) => t.finished_at)
      .sort((a, b) => b.finished_at!.getTime() - a.finished_at!.getTime())
      .slice(0, limit)
      .map((t) => ({ ms: t.finished_at!.getTime() - t.started_at.getTime(), finished_at: t.finished_at! }));
  }
}
