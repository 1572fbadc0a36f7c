import { randomUUID } from 'node:crypto';
import type { InboundMessage } from '../../kernel/envelope.js';
import { QUEUE_MODES } from '../../kernel/queue-modes.js';
import type { Db } from '../db/port.js';
import { acceptOpening } from './accept-opening.js';
import { InboxStore } from './inbox.js';
import type { AcceptMeta, InboxMessage } from './ports/inbox.js';
import type { StoredMessage } from './ports/transcript.js';
import type { AcceptOpened, FinishTurn, OpenTurn, StartedTurn, StartTurn, TurnRecord, TurnRepository } from './ports/turns.js';
import { type ConversationColumns, conversationFromRow, type InboxColumns, inboxFromRow, type TurnColumns, turnFromRow } from './rows.js';

interface StartRow {
  conversation: ConversationColumns | null;
  mode: string | null;
  has_work: boolean;
  pending: InboxColumns[];
  turn: TurnColumns | null;
  batch: InboxColumns[];
  history: Array<{ id: number; m: StoredMessage }>;
  summary: string | null;
  memory: string[];
}

/**
 * Turns and the drain's lease in plain SQL (Postgres and PGlite). The hot-path
 * methods are single statements (CTEs) to keep round trips low.
 */
export class TurnStore implements TurnRepository {
  constructor(private readonly db: Db) {}

  /** The accept statement with the first turn folded in (accept-opening.ts); a duplicate is read as the inbox reads one. */
  acceptOpening(msg: InboundMessage, agent: string, meta: AcceptMeta, open: OpenTurn): Promise<AcceptOpened> {
    return acceptOpening(this.db, msg, agent, meta, open, (m) => new InboxStore(this.db).inboxByExternalId(m.channel, m.externalId));
  }

  /**
   * One statement that starts a drain's next turn. It takes (or renews) the
   * conversation's lease for `lease`, but only when something waits and no
   * turn is parked; then resumes the turn that claimed the oldest waiting rows,
   * or opens a turn claiming rows as the queue mode says (`auto`: collect
   * claims none, interrupt all, the others the oldest one; `all`; `none` only
   * renews the lease and reads the state); and returns what the turn starts
   * from (transcript window, summary, memory). Reads come from the statement's
   * snapshot; the writes re-check their rows, so a snapshot that a previous
   * lease holder overtook makes the turn come back empty (call again) rather
   * than claim rows twice.
   */
  async startTurn(b: StartTurn): Promise<StartedTurn> {
    const r = await this.db.query<StartRow>(
      `with c0 as (select * from conversations where id = $2),
       mode as (
         select coalesce(case when c0.queue_mode = any($10::text[]) then c0.queue_mode end,
                         $6::jsonb -> 'byChannel' ->> c0.channel, $6::jsonb ->> 'default') as m from c0
       ),
       pend as (select * from inbox where conversation_id = $2 and consumed_at is null),
       parked as (select exists (select 1 from turns where conversation_id = $2 and status = 'parked') as p),
       c as (
         update conversations set lease_token = $4, lease_until = now() + $5::int * interval '1 millisecond'
         where id = $2 and exists (select 1 from pend) and not (select p from parked)
           and (lease_token is null or lease_token = $4 or lease_until < now())
         returning *
       ),
       claimed as (select turn_id from pend where turn_id is not null order by id limit 1),
       resumed as (
         update turns set attempt = attempt + 1, worker = $3
         where id = (select turn_id from claimed) and conversation_id = $2 and status = 'running'
           and $7 <> 'none' and exists (select 1 from c)
         returning *
       ),
       policy as (
         select case when $7 <> 'auto' then $7 when m = 'collect' then 'none' when m = 'interrupt' then 'all' else 'one' end as p from mode
       ),
       claim as (
         update inbox set turn_id = $1
         where id in (select id from pend where turn_id is null order by id limit case when (select p from policy) = 'one' then 1 end)
           and turn_id is null and consumed_at is null
           and (select p from policy) <> 'none' and exists (select 1 from c) and not exists (select 1 from claimed)
         returning *
       ),
       created as (
         insert into turns (id, conversation_id, seq, status, worker)
         select $1, $2, coalesce((select max(seq) from turns where conversation_id = $2), 0) + 1, 'running', $3
         where exists (select 1 from claim)
         returning *
       ),
       t as (select * from resumed union all select * from created),
       batch as (select * from claim union all select p.* from pend p where p.turn_id = (select id from resumed)),
       head as (select context, sender_identity from batch order by id limit 1)
       select
         (select row_to_json(c) from c) as conversation,
         (select m from mode) as mode,
         exists (select 1 from pend) and not (select p from parked) as has_work,
         coalesce((select json_agg(p order by p.id) from pend p), '[]'::json) as pending,
         (select row_to_json(t) from t) as turn,
         coalesce((select json_agg(b order by b.id) from batch b), '[]'::json) as batch,
         case when exists (select 1 from t) and (select context from head) is null then coalesce((select json_agg(json_build_object('id', h.id, 'm', h.content) order by h.id) from (
           select id, content from messages
           where conversation_id = $2 and id > (select summary_upto from c)
           order by id desc limit coalesce(($8::jsonb ->> (select agent from c))::int, ($8::jsonb ->> 'default')::int)) h), '[]'::json) else '[]'::json end as history,
         (select summary from c) as summary,
         case when exists (select 1 from t) then coalesce((select json_agg(mm.body order by mm.id) from (
           select id, body from memory
           where scope = 'global' or (scope = 'conversation' and scope_key = $2) or (scope = 'sender' and scope_key = (select sender_identity from head))
           order by id desc limit $9) mm), '[]'::json) else '[]'::json end as memory`,
      [
        't_' + randomUUID(),
        b.conversationId,
        b.worker,
        b.lease,
        b.leaseMs,
        JSON.stringify({ default: b.modes.default, byChannel: b.modes.byChannel }),
        b.claim,
        JSON.stringify(b.historyLimits),
        b.memoryLimit,
        // The same rule as queueModeFor: a conversation's own mode counts only if it is a known one.
        QUEUE_MODES,
      ],
    );
    const row = r.rows[0]!;
    const started: StartedTurn = {
      conversation: row.conversation ? conversationFromRow(row.conversation) : null,
      mode: row.mode,
      hasWork: row.has_work,
      pending: row.pending.map(inboxFromRow),
    };
    if (!row.turn) return started;
    return {
      ...started,
      turn: turnFromRow(row.turn),
      batch: row.batch.map(inboxFromRow),
      context: { history: row.history.map((h) => h.m), historyIds: row.history.map((h) => Number(h.id)), summary: row.summary, memory: row.memory },
    };
  }

  /**
   * Closes a turn atomically: appends its messages, marks its inbox rows consumed,
   * records usage, deletes its step journal. Writes nothing if the turn was already closed (finished: false).
   * Also returns the conversation's other unconsumed rows, so a drain needs no
   * extra round trip to learn whether more work is waiting; when none wait, it
   * also gives up the drain's lease.
   */
  async finishTurn(f: FinishTurn): Promise<{ finished: boolean; pending: InboxMessage[] }> {
    const r = await this.db.query<{ id: string; pending: InboxColumns[] }>(
      `with t as (
         update turns set status = $2, finished_at = now(), finish_reason = $3, error = $4, usage = $5, provider = $6, honesty = $8, state = null
         where id = $1 and status = 'running'
           -- Fenced: only the drain that holds the conversation's lease closes the turn.
           and ($9::text is null or exists (select 1 from conversations c where c.id = turns.conversation_id and c.lease_token = $9::text))
         returning id, conversation_id
       ), m as (
         insert into messages (conversation_id, turn_id, role, content)
         select t.conversation_id, t.id, e.value->>'role', e.value
         from t cross join jsonb_array_elements($7::jsonb) with ordinality as e(value, n)
         order by e.n
       ), i as (
         update inbox set consumed_at = now() where turn_id = (select id from t) and consumed_at is null
       ), j as (
         -- The step journal served the turn's attempts; closed, it has none left.
         delete from turn_journal where turn_id = (select id from t)
       ), rest as (
         select p.* from inbox p, t
         where p.conversation_id = t.conversation_id and p.consumed_at is null and p.turn_id is distinct from t.id
       ), rel as (
         -- A message accepted after this statement's snapshot enqueues its own drain, which finds the lease free.
         update conversations set lease_token = null, lease_until = null
         where id = (select conversation_id from t) and lease_token = $9 and not exists (select 1 from rest)
       )
       select t.id, coalesce((select json_agg(p order by p.id) from rest p), '[]'::json) as pending
       from t`,
      [
        f.turnId,
        f.status,
        f.finishReason,
        f.error ?? null,
        f.usage ? JSON.stringify(f.usage) : null,
        f.provider ? JSON.stringify(f.provider) : null,
        JSON.stringify(f.messages),
        f.honesty?.length ? JSON.stringify(f.honesty) : null,
        f.lease ?? null,
      ],
    );
    const row = r.rows[0];
    return row ? { finished: true, pending: row.pending.map(inboxFromRow) } : { finished: false, pending: [] };
  }

  /** Parks a running turn: its loop state waits here for approvals; the conversation waits with it. */
  async parkTurn(turnId: string, state: unknown, lease?: string): Promise<boolean> {
    const r = await this.db.query(
      `update turns set status = 'parked', state = $2 where id = $1 and status = 'running'
         and ($3::text is null or exists (select 1 from conversations c where c.id = turns.conversation_id and c.lease_token = $3::text))`,
      [turnId, JSON.stringify(state), lease ?? null],
    );
    return r.rowCount === 1;
  }

  /** Makes a parked turn runnable again; returns its conversation (to drain), or undefined if it was not parked. */
  async unparkTurn(turnId: string): Promise<string | undefined> {
    return (
      await this.db.query<{ conversation_id: string }>(`update turns set status = 'running' where id = $1 and status = 'parked' returning conversation_id`, [
        turnId,
      ])
    ).rows[0]?.conversation_id;
  }

  /**
   * Takes back what startTurn did for a turn that may not run yet (its key is at
   * its cap on concurrent turns), in one statement: a turn it opened (attempt 1)
   * is deleted and its rows are unclaimed, a turn it resumed gets its attempt
   * back, and the lease is given up. Nothing had been written for the turn, so
   * the next drain finds the conversation as it was.
   */
  async deferTurn(turnId: string, conversationId: string, lease: string): Promise<void> {
    await this.db.query(
      `with held as (
         -- Only the drain that still holds the lease takes its turn back: one whose lease another drain
         -- took after it expired would undo that drain's resumed turn.
         select 1 from conversations where id = $2 and lease_token = $3
       ), opened as (
         delete from turns where id = $1 and conversation_id = $2 and status = 'running' and attempt = 1 and exists (select 1 from held)
         returning id
       ), unclaimed as (
         update inbox set turn_id = null where turn_id = (select id from opened) and consumed_at is null
       ), resumed as (
         update turns set attempt = attempt - 1 where id = $1 and conversation_id = $2 and status = 'running' and attempt > 1 and exists (select 1 from held)
       )
       update conversations set lease_token = null, lease_until = null where id = $2 and lease_token = $3`,
      [turnId, conversationId, lease],
    );
  }

  /** Keeps a drain's lease; false when it is no longer this drain's. */
  async renewLease(conversationId: string, lease: string, leaseMs: number): Promise<boolean> {
    const r = await this.db.query(`update conversations set lease_until = now() + $3::int * interval '1 millisecond' where id = $1 and lease_token = $2`, [
      conversationId,
      lease,
      leaseMs,
    ]);
    return r.rowCount === 1;
  }

  async releaseLease(conversationId: string, lease: string): Promise<void> {
    await this.db.query('update conversations set lease_token = null, lease_until = null where id = $1 and lease_token = $2', [conversationId, lease]);
  }

  async turn(id: string): Promise<TurnRecord | undefined> {
    const row = (await this.db.query<TurnColumns>('select * from turns where id = $1', [id])).rows[0];
    return row && turnFromRow(row);
  }

  async turns(conversationId: string): Promise<TurnRecord[]> {
    return (await this.db.query<TurnColumns>('select * from turns where conversation_id = $1 order by seq', [conversationId])).rows.map(turnFromRow);
  }
}
