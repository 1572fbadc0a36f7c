import type { Db } from '../db/port.js';
import type { ConversationRecord, ConversationRepository, WaitingCount } from './ports/conversations.js';
import { type ConversationColumns, conversationFromRow } from './rows.js';

/** Conversations in plain SQL (Postgres and PGlite). */
export class ConversationStore implements ConversationRepository {
  constructor(private readonly db: Db) {}

  async conversationByKey(key: string): Promise<ConversationRecord | undefined> {
    const row = (await this.db.query<ConversationColumns>('select * from conversations where key = $1', [key])).rows[0];
    return row && conversationFromRow(row);
  }

  async conversation(id: string): Promise<ConversationRecord | undefined> {
    const row = (await this.db.query<ConversationColumns>('select * from conversations where id = $1', [id])).rows[0];
    return row && conversationFromRow(row);
  }

  /**
   * /new: the conversation under this key is set aside (its key gets a suffix), so
   * the next message with the key starts a fresh one. The old one stays readable.
   */
  async archiveConversation(key: string): Promise<boolean> {
    return (
      (await this.db.query(`update conversations set key = key || '#archived-' || floor(extract(epoch from now()) * 1000)::bigint where key = $1`, [key]))
        .rowCount === 1
    );
  }

  /** For /status: totals of a conversation. */
  async conversationStats(
    key: string,
  ): Promise<{ id: string; turns: number; tokens: number; running: boolean; parked: boolean; pendingApprovals: number } | undefined> {
    return (
      await this.db.query<{ id: string; turns: number; tokens: number; running: boolean; parked: boolean; pendingApprovals: number }>(
        `select c.id,
                (select count(*)::int from turns t where t.conversation_id = c.id) as turns,
                (select coalesce(sum((t.usage->>'totalTokens')::bigint), 0)::int from turns t where t.conversation_id = c.id) as tokens,
                exists (select 1 from turns t where t.conversation_id = c.id and t.status = 'running') as running,
                exists (select 1 from turns t where t.conversation_id = c.id and t.status = 'parked') as parked,
                (select count(*)::int from approvals a where a.conversation_id = c.id and a.status = 'pending') as "pendingApprovals"
         from conversations c where c.key = $1`,
        [key],
      )
    ).rows[0];
  }

  /** Messages waiting in a conversation (not yet taken by a turn). */
  async waitingCount(conversationKey: string): Promise<WaitingCount> {
    const r = await this.db.query<{
      waiting: number;
      running: boolean;
      mode: string | null;
      handoff_id: string | null;
      handoff_state: string | null;
      id: string;
    }>(
      `select (select count(*)::int from inbox i where i.conversation_id = c.id and i.turn_id is null and i.consumed_at is null) as waiting,
              exists (select 1 from turns t where t.conversation_id = c.id and t.status = 'running') as running,
              c.queue_mode as mode, c.id,
              h.id as handoff_id, h.state as handoff_state
       from conversations c left join handoffs h on h.conversation_id = c.id and h.state in ('requested', 'taken')
       where c.key = $1`,
      [conversationKey],
    );
    const row = r.rows[0];
    if (!row) return { waiting: 0, running: false, mode: null, handoff: null };
    return {
      waiting: row.waiting,
      running: row.running,
      mode: row.mode,
      handoff: row.handoff_id ? { id: row.handoff_id, state: row.handoff_state as 'requested' | 'taken', conversationId: row.id } : null,
    };
  }

  async setQueueMode(conversationKey: string, mode: string): Promise<boolean> {
    return (await this.db.query('update conversations set queue_mode = $2 where key = $1', [conversationKey, mode])).rowCount === 1;
  }

  /** Recently active conversations, newest first. */
  async listConversations(limit = 50): Promise<Array<ConversationRecord & { updatedAt: Date; turns: number }>> {
    return (
      await this.db.query<ConversationColumns & { updated_at: Date; turns: number }>(
        `select c.*, (select count(*)::int from turns t where t.conversation_id = c.id) as turns from conversations c order by c.updated_at desc limit $1`,
        [limit],
      )
    ).rows.map((r) => ({ ...conversationFromRow(r), updatedAt: r.updated_at, turns: r.turns }));
  }
}
