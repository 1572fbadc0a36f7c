import type { InboundMessage } from '../../kernel/envelope.js';
import type { Db } from '../db/port.js';
import { acceptParams } from './accept-params.js';
import type { AcceptMeta, AcceptResult, InboxMessage, InboxRepository } from './ports/inbox.js';
import { type InboxColumns, inboxFromRow } from './rows.js';

/** The inbox in plain SQL (Postgres and PGlite). */
export class InboxStore implements InboxRepository {
  constructor(private readonly db: Db) {}

  /** Upserts the conversation and writes the inbox row, in one statement. */
  async accept(msg: InboundMessage, agent = 'default', meta: AcceptMeta = {}): Promise<AcceptResult> {
    const r = await this.db.query<{ conversation_id: string; inbox_id: number | null }>(
      `with c as (
         insert into conversations (id, key, channel, owner, agent) values ($1, $2, $3, $4, $5)
         on conflict (key) do update set updated_at = now()
         returning id
       ), i as (
         insert into inbox (conversation_id, channel, external_id, sender, text, attachments, reply_to, context, received_at, sender_identity, overrides, request_hash, traceparent)
         select c.id, $3, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 from c
         on conflict (channel, external_id) do nothing
         returning id
       )
       select c.id as conversation_id, (select id from i) as inbox_id from c`,
      acceptParams(msg, agent, meta),
    );
    const row = r.rows[0]!;
    if (row.inbox_id != null) return { conversationId: row.conversation_id, inboxId: row.inbox_id, duplicate: false };
    return (await this.inboxByExternalId(msg.channel, msg.externalId))!;
  }

  /** The inbox row of a message already written, as accept() reports a duplicate. */
  async inboxByExternalId(channel: string, externalId: string): Promise<AcceptResult | undefined> {
    const e = (
      await this.db.query<{ id: number; conversation_id: string; request_hash: string | null; turn_id: string | null }>(
        'select id, conversation_id, request_hash, turn_id from inbox where channel = $1 and external_id = $2',
        [channel, externalId],
      )
    ).rows[0];
    if (!e) return undefined;
    return {
      conversationId: e.conversation_id,
      inboxId: e.id,
      duplicate: true,
      ...(e.request_hash ? { requestHash: e.request_hash } : {}),
      // Recorded while the conversation was taken over (src/handoffs/): no turn answers it.
      ...(e.turn_id?.startsWith('handoff:') ? { handoff: e.turn_id.slice(8) } : {}),
    };
  }

  /** Unconsumed inbox rows of a conversation, oldest first. Rows with a turn id belong to an unfinished turn. */
  async pending(conversationId: string): Promise<InboxMessage[]> {
    return (await this.db.query<InboxColumns>('select * from inbox where conversation_id = $1 and consumed_at is null order by id', [conversationId])).rows.map(
      inboxFromRow,
    );
  }

  async inboxRow(id: number): Promise<InboxMessage | undefined> {
    const row = (await this.db.query<InboxColumns>('select * from inbox where id = $1', [id])).rows[0];
    return row && inboxFromRow(row);
  }

  /** Steering: claims messages that arrived during the turn into it. */
  async claimInto(turnId: string, conversationId: string): Promise<InboxMessage[]> {
    return (
      await this.db.query<InboxColumns>(`update inbox set turn_id = $1 where conversation_id = $2 and turn_id is null and consumed_at is null returning *`, [
        turnId,
        conversationId,
      ])
    ).rows
      .map(inboxFromRow)
      .sort((a, b) => a.id - b.id);
  }

  /** Conversations with inbox rows nobody has consumed for a while: the recovery sweep re-drains them. */
  async stuckConversations(olderThanMs: number): Promise<string[]> {
    const r = await this.db.query<{ conversation_id: string }>(
      `select distinct conversation_id from inbox
       where consumed_at is null and created_at < now() - ($1::double precision * interval '1 millisecond')`,
      [olderThanMs],
    );
    return r.rows.map((x) => x.conversation_id);
  }
}
