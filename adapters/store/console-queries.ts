import type { Db } from '../db/port.js';
import type { ConsoleConversation, ConsoleQueries, TurnLatency } from './ports/console-queries.js';

/** The operator console's read-only views in plain SQL (Postgres and PGlite); the statements the console ran itself before. */
export class ConsoleQueryStore implements ConsoleQueries {
  constructor(private readonly db: Db) {}

  async recentConversations(limit = 30): Promise<ConsoleConversation[]> {
    return (
      await this.db.query<ConsoleConversation>(
        `select c.id, c.key, c.channel, c.updated_at as "updatedAt",
                (select t.status from turns t where t.conversation_id = c.id order by t.seq desc limit 1) as status,
                (select count(*)::int from turns t where t.conversation_id = c.id) as turns
         from conversations c order by c.updated_at desc limit $1`,
        [limit],
      )
    ).rows;
  }

  async turnLatencies(limit = 60): Promise<TurnLatency[]> {
    return (
      await this.db.query<TurnLatency>(
        `select extract(epoch from (finished_at - started_at)) * 1000 as ms, finished_at as "finishedAt" from turns where finished_at is not null order by finished_at desc limit $1`,
        [limit],
      )
    ).rows;
  }
}
