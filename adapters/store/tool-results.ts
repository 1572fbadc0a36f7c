import { randomUUID } from 'node:crypto';
import type { Db } from '../db/port.js';
import type { ToolResultRepository } from './ports/tool-results.js';

/** Stored tool results in plain SQL (Postgres and PGlite). */
export class ToolResultStore implements ToolResultRepository {
  constructor(private readonly db: Db) {}

  async saveToolResult(turnId: string, tool: string, content: string): Promise<string> {
    const id = 'tr_' + randomUUID().replace(/-/g, '').slice(0, 16);
    await this.db.query('insert into tool_results (id, turn_id, tool, content) values ($1, $2, $3, $4)', [id, turnId, tool, content]);
    return id;
  }

  /** A stored tool result, only when it belongs to a turn of this conversation. */
  async toolResult(id: string, conversationId: string): Promise<{ content: string; turnId: string } | undefined> {
    return (
      await this.db.query<{ content: string; turnId: string }>(
        'select r.content, r.turn_id as "turnId" from tool_results r join turns t on t.id = r.turn_id where r.id = $1 and t.conversation_id = $2',
        [id, conversationId],
      )
    ).rows[0];
  }
}
