import type { ConsoleConversation, ConsoleQueries, ConsoleTurnLatency } from '../../../adapters/store/ports/console-queries.js';
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
        const last = this.t.inbox.filter((i) => i.conversationId === c.id).at(-1);
        const times = [c.updatedAt, own[0]?.startedAt, own[0]?.finishedAt].filter((d): d is Date => !!d).map((d) => d.getTime());
        return {
          id: c.id,
          key: c.key,
          channel: c.channel,
          updatedAt: c.updatedAt,
          status: own[0]?.status ?? null,
          turns: own.length,
          senderName: last?.sender.name ?? null,
          senderId: last?.senderIdentity ?? null,
          lastActivity: new Date(Math.max(...times)),
        };
      });
  }

  async turnLatencies(limit = 60): Promise<ConsoleTurnLatency[]> {
    return [...this.t.turns.values()]
      .filter((t) => t.finishedAt)
      .sort((a, b) => b.finishedAt!.getTime() - a.finishedAt!.getTime())
      .slice(0, limit)
      .map((t) => {
        // The wait for approvals, as the SQL store counts it (overlapping waits once).
        const start = t.startedAt.getTime();
        const end = t.finishedAt!.getTime();
        const spans = this.t.approvals
          .filter((a) => a.turnId === t.id)
          .map((a) => [Math.max(start, a.createdAt.getTime()), Math.min(end, (a.decidedAt ?? a.expiresAt).getTime())] as const)
          .filter(([a, b]) => b > a)
          .sort((x, y) => x[0] - y[0]);
        let parked = 0;
        let reach = start;
        for (const [a, b] of spans) {
          if (b <= reach) continue;
          parked += b - Math.max(a, reach);
          reach = b;
        }
        return { ms: end - start, parkedMs: parked, finishedAt: t.finishedAt! };
      });
  }
}
