import type { InboundMessage } from '../../kernel/envelope.js';
import type { Db } from '../db/port.js';
import { acceptParams } from './accept-params.js';
import type { AcceptMeta, AcceptResult } from './ports/inbox.js';
import type { AcceptOpened, OpenTurn, StartedTurn } from './ports/turns.js';
import { type ConversationColumns, conversationFromRow, type InboxColumns, inboxFromRow, type TurnColumns, turnFromRow } from './rows.js';

interface OpeningRow {
  conversation_id: string;
  inbox_id: number | null;
  conversation: ConversationColumns | null;
  row: InboxColumns | null;
  turn: TurnColumns | null;
  memory: string[];
}

/**
 * The accept statement of a message that opens its conversation, with what the drain's first
 * startTurn would do folded in: a conversation this statement creates is written with the drain's
 * lease, the message with the turn's id, and the turn (seq 1, running, attempt 1); the memory the
 * turn starts from is read in the same statement. One statement and one synchronous commit, where
 * accept + startTurn took two of each; every foreign key and the lease are as startTurn leaves them,
 * so a process dying after the commit leaves what a worker dying after startTurn leaves (the
 * recovery sweep resumes the turn once the lease expires).
 *
 * The lease is the new row's own: the upsert keeps an existing conversation's lease (`do update`
 * touches only updated_at), and its token tells which of the two the statement met. A new
 * conversation has no transcript, summary, parked turn or other waiting message, so the history is
 * empty and the policy of any queue mode but collect claims just this message (the caller does not
 * open a turn for collect).
 */
export async function acceptOpening(
  db: Db,
  msg: InboundMessage,
  agent: string,
  meta: AcceptMeta,
  open: OpenTurn,
  duplicate: (msg: InboundMessage) => Promise<AcceptResult | undefined>,
): Promise<AcceptOpened> {
  const r = await db.query<OpeningRow>(
    `with c as (
       insert into conversations (id, key, channel, owner, agent, lease_token, lease_until)
       values ($1, $2, $3, $4, $5, $17, now() + $18::int * interval '1 millisecond')
       on conflict (key) do update set updated_at = now()
       returning *
     ), i as (
       insert into inbox (conversation_id, channel, external_id, sender, text, attachments, reply_to, context, received_at, sender_identity, overrides, request_hash, traceparent, turn_id)
       select c.id, $3, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, case when c.lease_token = $17 then $19 end from c
       on conflict (channel, external_id) do nothing
       returning *
     ), t as (
       insert into turns (id, conversation_id, seq, status, worker)
       select $19, c.id, 1, 'running', $20 from c, i where c.lease_token = $17 and i.turn_id = $19
       returning *
     )
     select c.id as conversation_id, (select id from i) as inbox_id,
       case when exists (select 1 from t) then row_to_json(c) end as conversation,
       (select row_to_json(i) from i) as row,
       (select row_to_json(t) from t) as turn,
       case when exists (select 1 from t) then coalesce((select json_agg(mm.body order by mm.id) from (
         select id, body from memory
         where scope = 'global' or (scope = 'sender' and scope_key = $13)
         order by id desc limit $21) mm), '[]'::json) else '[]'::json end as memory
     from c`,
    [...acceptParams(msg, agent, meta), open.lease, open.leaseMs, open.turnId, open.worker, open.memoryLimit],
  );
  const row = r.rows[0]!;
  if (row.inbox_id == null) return { accepted: (await duplicate(msg))! };
  const accepted: AcceptResult = { conversationId: row.conversation_id, inboxId: row.inbox_id, duplicate: false };
  if (!row.turn || !row.conversation || !row.row) return { accepted };
  const claimed = inboxFromRow(row.row);
  const started: StartedTurn = {
    conversation: conversationFromRow(row.conversation),
    mode: null,
    hasWork: true,
    // As startTurn reports it: the rows before its claim.
    pending: [{ ...claimed, turnId: null }],
    turn: turnFromRow(row.turn),
    batch: [claimed],
    context: { history: [], historyIds: [], summary: null, memory: row.memory },
  };
  return { accepted, started };
}
