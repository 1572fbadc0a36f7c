import type { Db } from '../db/port.js';
import type { ConsoleConversation, ConsoleQueries, ConsoleTurnLatency } from './ports/console-queries.js';

/** The operator console's read-only views in plain SQL (Postgres and PGlite); the statements the console ran itself before. */
export class ConsoleQueryStore implements ConsoleQueries {
  constructor(private readonly db: Db) {}

  async recentConversations(limit = 30): Promise<ConsoleConversation[]> {
    return (
      await this.db.query<ConsoleConversation>(
        `select c.id, c.key, c.channel, c.updated_at as "updatedAt",
                lt.status,
                (select count(*)::int from turns t where t.conversation_id = c.id) as turns,
                li.sender->>'name' as "senderName", li.sender_identity as "senderId",
                greatest(c.updated_at, lt.started_at, lt.finished_at) as "lastActivity"
         from conversations c
         left join lateral (select t.status, t.started_at, t.finished_at from turns t where t.conversation_id = c.id order by t.seq desc limit 1) lt on true
         left join lateral (select i.sender, i.sender_identity from inbox i where i.conversation_id = c.id order by i.id desc limit 1) li on true
         order by c.updated_at desc limit $1`,
        [limit],
      )
    ).rows;
  }

  async turnLatencies(limit = 60): Promise<ConsoleTurnLatency[]> {
    // A parked turn's finished_at - started_at includes the wait for a human: each approval it
    // asked for spans created_at .. decided_at (or its expiry); the union of those spans is subtracted.
    const rows = (
      await this.db.query<{ started_at: Date; finished_at: Date; waits: Array<[string, string | null, string]> | string }>(
        `select t.started_at, t.finished_at,
                coalesce((select json_agg(json_build_array(a.created_at, a.decided_at, a.expires_at)) from approvals a where a.turn_id = t.id), '[]') as waits
         from turns t where t.finished_at is not null order by t.finished_at desc limit $1`,
        [limit],
      )
    ).rows;
    return rows.map((r) => {
      const start = new Date(r.started_at).getTime();
      const end = new Date(r.finished_at).getTime();
      const waits = (typeof r.waits === 'string' ? JSON.parse(r.waits) : r.waits) as Array<[string, string | null, string]>;
      const spans = waits
        .map(([from, decided, expires]) => [Math.max(start, Date.parse(from)), Math.min(end, Date.parse(decided ?? expires))] as const)
        .filter(([a, b]) => b > a)
        .sort((x, y) => x[0] - y[0]);
      let parked = 0;
      let reach = start;
      for (const [a, b] of spans) {
        if (b <= reach) continue;
        parked += b - Math.max(a, reach);
        reach = b;
      }
      return { ms: end - start, parkedMs: parked, finishedAt: new Date(r.finished_at) };
    });
  }
}
