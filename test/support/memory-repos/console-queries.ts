import type { ConsoleConversation, ConsoleQueries } from '../../../adapters/store/ports/console-queries.js';
import type { Tables } from './tables.js';

export class MemoryConsoleQueries implements ConsoleQueries {
  constructor(private readonly t: Tables) {}

  async recentConversations(limit = 30): Promise<ConsoleConversation[]> {
    const turns = [...this.t.turns.values()];
    return [...this.t.conversations.values()]
      .sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime())
      .slice(0, limit)
      .map((c) => {
        const own = turns.filter((t) => t.conversationId === c.id).sort((a, b) => b.seq - a.seq);
        return { id: c.id, key: c.key, channel: c.channel, updatedAt: c.updatedAt, status: own[0]?.status ?? null, turns: own.length };
      });
  }

  async turnLatencies(limit = 60): Promise<Array<{ ms: number; finishedAt: Date }>> {
    return [...this.t.turns.values()]
      .filter((t) => t.finishedAt)
      .sort((a, b) => b.finishedAt!.getTime() - a.finishedAt!.getTime())
      .slice(0, limit)
      .map((t) => ({ ms: t.finishedAt!.getTime() - t.startedAt.getTime(), finishedAt: t.finishedAt! }));
  }
}
