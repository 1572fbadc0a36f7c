import type { Db } from '../db/port.js';
import type { MessageHit, StoredMessage, TranscriptEntry, TranscriptRepository } from './ports/transcript.js';
import { assistantText } from './rows.js';

/** The transcript in plain SQL (Postgres and PGlite). */
export class TranscriptStore implements TranscriptRepository {
  constructor(private readonly db: Db) {}

  /** The transcript the model sees, oldest first, at most `limit` messages. */
  async transcript(conversationId: string, limit = 200): Promise<StoredMessage[]> {
    const r = await this.db.query<{ content: StoredMessage }>(
      `select content from (
         select id, content from messages where conversation_id = $1 order by id desc limit $2
       ) m order by id`,
      [conversationId, limit],
    );
    return r.rows.map((x) => x.content);
  }

  /** Stored messages of a conversation after a given message id (for clients catching up). */
  async messagesAfter(conversationId: string, afterId: number, limit = 200): Promise<TranscriptEntry[]> {
    return (
      await this.db.query<TranscriptEntry>(
        'select id, turn_id as "turnId", role, content, created_at as "createdAt" from messages where conversation_id = $1 and id > $2 order by id limit $3',
        [conversationId, afterId, limit],
      )
    ).rows;
  }

  /** The assistant's reply text of a finished turn (all its assistant text, in order). */
  async turnReply(turnId: string): Promise<string> {
    const r = await this.db.query<{ content: StoredMessage }>(`select content from messages where turn_id = $1 and role = 'assistant' order by id`, [turnId]);
    return r.rows
      .map((m) => assistantText(m.content))
      .filter(Boolean)
      .join('\n\n');
  }

  /**
   * Full-text search over past messages visible to a sender (the conversations
   * they wrote in) — the conversation_search tool. `sender` is a canonical
   * identity, compared as a whole: the same id on another channel is someone else.
   */
  async searchMessages(query: string, opts: { sender: string; limit?: number }): Promise<MessageHit[]> {
    return (
      await this.db.query<MessageHit>(
        `select m.conversation_id as "conversationId", m.id, m.role, left(coalesce(m.content->>'content', m.content::text), 300) as snippet, m.created_at as "createdAt"
         from messages m
         where to_tsvector('simple', coalesce(m.content->>'content', '') || ' ' || coalesce(jsonb_path_query_array(m.content, '$.content[*].text')::text, ''))
               @@ plainto_tsquery('simple', $1)
           and m.conversation_id in (select i.conversation_id from inbox i where i.sender_identity = $2)
         order by m.id desc limit $3`,
        [query, opts.sender, opts.limit ?? 10],
      )
    ).rows;
  }

  /** Records a compaction: the running summary now covers the messages up to uptoId. */
  async saveSummary(conversationId: string, uptoId: number, summary: string): Promise<boolean> {
    return (
      (await this.db.query(`update conversations set summary = $2, summary_upto = $3 where id = $1 and summary_upto < $3`, [conversationId, summary, uptoId]))
        .rowCount === 1
    );
  }
}
