import type { ConsoleConversation, ConsoleQueries, ConsoleTurnLatency } from '../../../adapters/store/ports/console-queries.js';
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
        const last = this.t.inbox.filter((i) => i.conversation_id === c.id).at(-1);
        const times = [c.updated_at, own[0]?.started_at, own[0]?.finished_at].filter((d): d is Date => !!d).map((d) => d.getTime());
        return {
          id: c.id,
          key: c.key,
          channel: c.channel,
          updated_at: c.updated_at,
          status: own[0]?.status ?? null,
          turns: own.length,
          sender_name: last?.sender.name ?? null,
          sender_id: last?.sender_identity ?? null,
          last_activity: new Date(Math.max(...times)),
        };
      });
  }

  async turnLatencies(limit = 60): Promise<ConsoleTurnLatency[]> {
    return [...this.t.turns.values()]
      .filter((t) => t.finished_at)
      .sort((a, b) => b.finished_at!.getTime() - a.finished_at!.getTime())
      .slice(0, limit)
      .map((t) => {
        // The wait for approvals, as the SQL store counts it (overlapping waits once).
        const start = t.started_at.getTime();
        const end = t.finished_at!.getTime();
        const spans = this.t.approvals
          .filter((a) => a.turn_id === t.id)
          .map((a) => [Math.max(start, a.created_at.getTime()), Math.min(end, (a.decided_at ?? a.expires_at).getTime())] as const)
          .filter(([a, b]) => b > a)
          .sort((x, y) => x[0] - y[0]);
        let parked = 0;
        let reach = start;
        for (const [a, b] of spans) {
          if (b <= reach) continue;
          parked += b - Math.max(a, reach);
          reach = b;
        }
        return { ms: end - start, parked_ms: parked, finished_at: t.finished_at! };
      });
  }
}
