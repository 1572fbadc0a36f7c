import { randomUUID } from 'node:crypto';
import type { Db } from '../db/port.js';
import type { InboundMessage, ContextMessage } from '../../kernel/envelope.js';
import { formatIdentity, identityOf } from '../../kernel/identity.js';
import { QUEUE_MODES } from '../../kernel/queue-modes.js';

/** A stored transcript message, in pi-ai's message shape (user, assistant or toolResult). */
export type StoredMessage = { role: string };

export interface ConversationRow {
  id: string;
  key: string;
  channel: string;
  owner: string | null;
  agent: string;
  queue_mode?: string | null;
  created_at: Date;
}

export interface InboxRow {
  id: number;
  conversation_id: string;
  channel: string;
  external_id: string;
  sender: { id: string; workspace?: string; name?: string };
  /**
   * The sender's identity in canonical form (kernel/identity.ts): what every look-up
   * by sender compares. Null only on a row written by a version from before
   * migration 010 after it ran (see senderIdentity()).
   */
  sender_identity: string | null;
  text: string;
  attachments: unknown[];
  reply_to: Record<string, unknown> | null;
  context: ContextMessage[] | null;
  received_at: Date;
  turn_id: string | null;
  consumed_at: Date | null;
}

export interface TurnRow {
  id: string;
  conversation_id: string;
  seq: number;
  status: 'running' | 'parked' | 'done' | 'failed';
  /** A turn that was parked for approvals: its loop state (see turn-runner). */
  state: unknown;
  honesty: unknown;
  attempt: number;
  worker: string | null;
  started_at: Date;
  finished_at: Date | null;
  finish_reason: string | null;
  error: string | null;
  usage: Record<string, unknown> | null;
  provider: Record<string, unknown> | null;
}

export interface AcceptResult {
  conversationId: string;
  inboxId: number;
  /** True when (channel, externalId) was already in the inbox: nothing new was written. */
  duplicate: boolean;
}

interface StartRow {
  conversation: (ConversationRow & { created_at: string }) | null;
  mode: string | null;
  has_work: boolean;
  pending: InboxRow[];
  turn: TurnRow | null;
  batch: InboxRow[];
  history: Array<{ id: number; m: StoredMessage }>;
  summary: string | null;
  memory: string[];
}

export interface StartTurn {
  conversationId: string;
  worker: string;
  /** This drain's lease token, and how long the lease lasts unless renewed. */
  lease: string;
  leaseMs: number;
  /** Which rows a new turn claims (a turn that already claimed rows is always resumed, except with `none`). */
  claim: 'auto' | 'all' | 'none';
  /** Queue modes from the configuration; a conversation's own mode wins. */
  modes: { default: string; byChannel: Record<string, string> };
  /** Transcript window by agent name (`default` for an unknown agent). */
  historyLimits: Record<string, number>;
  memoryLimit: number;
}

/** What the turn starts from: the transcript window and memory notes. */
export interface StartContext {
  history: StoredMessage[];
  historyIds: number[];
  summary: string | null;
  memory: string[];
}

export interface StartedTurn {
  /** Set when this drain holds the lease. */
  conversation: ConversationRow | null;
  mode: string | null;
  /** Something waits and no turn is parked (whether or not the lease was free). */
  hasWork: boolean;
  /** The unconsumed rows, oldest first, as the statement found them (before its claim). */
  pending: InboxRow[];
  /** The opened or resumed turn, the rows it answers, and its context. */
  turn?: TurnRow;
  batch?: InboxRow[];
  context?: StartContext;
}

export interface FinishTurn {
  turnId: string;
  status: 'done' | 'failed';
  messages: StoredMessage[];
  finishReason: string;
  error?: string;
  usage?: Record<string, unknown>;
  provider?: Record<string, unknown>;
  /** Claims the honesty check corrected. */
  honesty?: unknown[];
  /** The drain's lease: released in the same statement when nothing else waits. */
  lease?: string;
}

/**
 * All durable state, in plain SQL that runs unchanged on Postgres and PGlite.
 * Hot-path methods are single statements (CTEs) to keep round trips low.
 */
export class Store {
  constructor(readonly db: Db) {}

  /** Upserts the conversation and writes the inbox row, in one statement. */
  async accept(msg: InboundMessage, agent = 'default'): Promise<AcceptResult> {
    const r = await this.db.query<{ conversation_id: string; inbox_id: number | null }>(
      `with c as (
         insert into conversations (id, key, channel, owner, agent) values ($1, $2, $3, $4, $5)
         on conflict (key) do update set updated_at = now()
         returning id
       ), i as (
         insert into inbox (conversation_id, channel, external_id, sender, text, attachments, reply_to, context, received_at, sender_identity)
         select c.id, $3, $6, $7, $8, $9, $10, $11, $12, $13 from c
         on conflict (channel, external_id) do nothing
         returning id
       )
       select c.id as conversation_id, (select id from i) as inbox_id from c`,
      [
        'c_' + randomUUID(),
        msg.conversationKey,
        msg.channel,
        msg.owner ?? null,
        agent,
        msg.externalId,
        JSON.stringify(msg.sender),
        msg.text,
        JSON.stringify(msg.attachments),
        msg.replyTo ? JSON.stringify(msg.replyTo) : null,
        msg.context ? JSON.stringify(msg.context) : null,
        msg.receivedAt,
        formatIdentity(identityOf(msg)),
      ],
    );
    const row = r.rows[0]!;
    if (row.inbox_id != null) return { conversationId: row.conversation_id, inboxId: row.inbox_id, duplicate: false };
    const existing = await this.db.query<{ id: number; conversation_id: string }>(
      'select id, conversation_id from inbox where channel = $1 and external_id = $2',
      [msg.channel, msg.externalId],
    );
    const e = existing.rows[0]!;
    return { conversationId: e.conversation_id, inboxId: e.id, duplicate: true };
  }

  /** The inbox row of a message already written, as accept() reports a duplicate. */
  async inboxByExternalId(channel: string, externalId: string): Promise<AcceptResult | undefined> {
    const e = (await this.db.query<{ id: number; conversation_id: string }>('select id, conversation_id from inbox where channel = $1 and external_id = $2', [channel, externalId])).rows[0];
    return e ? { conversationId: e.conversation_id, inboxId: e.id, duplicate: true } : undefined;
  }

  async conversationByKey(key: string): Promise<ConversationRow | undefined> {
    return (await this.db.query<ConversationRow>('select * from conversations where key = $1', [key])).rows[0];
  }

  async conversation(id: string): Promise<ConversationRow | undefined> {
    return (await this.db.query<ConversationRow>('select * from conversations where id = $1', [id])).rows[0];
  }

  /** Parks a running turn: its loop state waits here for approvals; the conversation waits with it. */
  async parkTurn(turnId: string, state: unknown): Promise<boolean> {
    return (await this.db.query(`update turns set status = 'parked', state = $2 where id = $1 and status = 'running'`, [turnId, JSON.stringify(state)])).rowCount === 1;
  }

  /** Makes a parked turn runnable again; returns its conversation (to drain), or undefined if it was not parked. */
  async unparkTurn(turnId: string): Promise<string | undefined> {
    return (await this.db.query<{ conversation_id: string }>(`update turns set status = 'running' where id = $1 and status = 'parked' returning conversation_id`, [turnId])).rows[0]?.conversation_id;
  }

  async saveToolResult(turnId: string, tool: string, content: string): Promise<string> {
    const id = 'tr_' + randomUUID().replace(/-/g, '').slice(0, 16);
    await this.db.query('insert into tool_results (id, turn_id, tool, content) values ($1, $2, $3, $4)', [id, turnId, tool, content]);
    return id;
  }

  /** A stored tool result, only when it belongs to a turn of this conversation. */
  async toolResult(id: string, conversationId: string): Promise<{ content: string; turn_id: string } | undefined> {
    return (
      await this.db.query<{ content: string; turn_id: string }>(
        'select r.content, r.turn_id from tool_results r join turns t on t.id = r.turn_id where r.id = $1 and t.conversation_id = $2',
        [id, conversationId],
      )
    ).rows[0];
  }

  /** Stored messages of a conversation after a given message id (for clients catching up). */
  async messagesAfter(conversationId: string, afterId: number, limit = 200): Promise<Array<{ id: number; turn_id: string | null; role: string; content: StoredMessage; created_at: Date }>> {
    return (
      await this.db.query<{ id: number; turn_id: string | null; role: string; content: StoredMessage; created_at: Date }>(
        'select id, turn_id, role, content, created_at from messages where conversation_id = $1 and id > $2 order by id limit $3',
        [conversationId, afterId, limit],
      )
    ).rows;
  }

  async addMemory(scope: 'global' | 'conversation' | 'sender', scopeKey: string, body: string): Promise<number> {
    return (await this.db.query<{ id: number }>('insert into memory (scope, scope_key, body) values ($1, $2, $3) returning id', [scope, scopeKey, body])).rows[0]!.id;
  }

  /** Notes visible to a conversation and its sender (a canonical identity), newest first, filtered by words of the query. */
  async searchMemory(conversationId: string, senderId: string, query: string, limit = 20): Promise<Array<{ id: number; scope: string; body: string }>> {
    const words = query.toLowerCase().split(/\W+/).filter((w) => w.length > 2).slice(0, 8);
    const r = await this.db.query<{ id: number; scope: string; body: string }>(
      `select id, scope, body from memory
       where (scope = 'global' or (scope = 'conversation' and scope_key = $1) or (scope = 'sender' and scope_key = $2))
         and ($3::text[] = '{}' or exists (select 1 from unnest($3::text[]) w where lower(body) like '%' || w || '%'))
       order by id desc limit $4`,
      [conversationId, senderId, words, limit],
    );
    return r.rows;
  }

  /** Operators: every note, optionally of one scope (and key). */
  async listMemory(scope?: string, scopeKey?: string, limit = 200): Promise<Array<{ id: number; scope: string; scope_key: string; body: string; created_at: Date }>> {
    return (
      await this.db.query<{ id: number; scope: string; scope_key: string; body: string; created_at: Date }>(
        `select id, scope, scope_key, body, created_at from memory where ($1::text is null or scope = $1) and ($2::text is null or scope_key = $2) order by id desc limit $3`,
        [scope ?? null, scopeKey ?? null, limit],
      )
    ).rows;
  }

  async deleteMemory(id: number): Promise<boolean> {
    return (await this.db.query('delete from memory where id = $1', [id])).rowCount === 1;
  }

  /**
   * A user's delete (the memory_forget tool): only what that user (a canonical
   * identity) may write, their own sender notes and this conversation's. Global notes are the
   * operators' (deleteMemory), and another sender's notes are not this one's.
   */
  async forgetMemory(id: number, conversationId: string, senderId: string): Promise<boolean> {
    return (
      await this.db.query(
        `delete from memory where id = $1 and ((scope = 'conversation' and scope_key = $2) or (scope = 'sender' and scope_key = $3))`,
        [id, conversationId, senderId],
      )
    ).rowCount === 1;
  }

  /** Unconsumed inbox rows of a conversation, oldest first. Rows with turn_id belong to an unfinished turn. */
  async pending(conversationId: string): Promise<InboxRow[]> {
    return (
      await this.db.query<InboxRow>(
        'select * from inbox where conversation_id = $1 and consumed_at is null order by id',
        [conversationId],
      )
    ).rows;
  }

  async inboxRow(id: number): Promise<InboxRow | undefined> {
    return (await this.db.query<InboxRow>('select * from inbox where id = $1', [id])).rows[0];
  }

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

  /**
   * Closes a turn atomically: appends its messages, marks its inbox rows consumed,
   * records usage. Writes nothing if the turn was already closed (finished: false).
   * Also returns the conversation's other unconsumed rows, so a drain needs no
   * extra round trip to learn whether more work is waiting; when none wait, it
   * also gives up the drain's lease.
   */
  async finishTurn(f: FinishTurn): Promise<{ finished: boolean; pending: InboxRow[] }> {
    const r = await this.db.query<{ id: string; pending: InboxRow[] }>(
      `with t as (
         update turns set status = $2, finished_at = now(), finish_reason = $3, error = $4, usage = $5, provider = $6, honesty = $8, state = null
         where id = $1 and status = 'running'
         returning id, conversation_id
       ), m as (
         insert into messages (conversation_id, turn_id, role, content)
         select t.conversation_id, t.id, e.value->>'role', e.value
         from t cross join jsonb_array_elements($7::jsonb) with ordinality as e(value, n)
         order by e.n
       ), i as (
         update inbox set consumed_at = now() where turn_id = (select id from t) and consumed_at is null
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
    return row ? { finished: true, pending: row.pending.map(inboxFromJson) } : { finished: false, pending: [] };
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
      conversation: row.conversation ? conversationFromJson(row.conversation) : null,
      mode: row.mode,
      hasWork: row.has_work,
      pending: row.pending.map(inboxFromJson),
    };
    if (!row.turn) return started;
    const t = row.turn;
    return {
      ...started,
      turn: { ...t, started_at: new Date(t.started_at), finished_at: t.finished_at ? new Date(t.finished_at) : null },
      batch: row.batch.map(inboxFromJson),
      context: { history: row.history.map((h) => h.m), historyIds: row.history.map((h) => Number(h.id)), summary: row.summary, memory: row.memory },
    };
  }

  /** Keeps a drain's lease; false when it is no longer this drain's. */
  async renewLease(conversationId: string, lease: string, leaseMs: number): Promise<boolean> {
    const r = await this.db.query(`update conversations set lease_until = now() + $3::int * interval '1 millisecond' where id = $1 and lease_token = $2`, [conversationId, lease, leaseMs]);
    return r.rowCount === 1;
  }

  async releaseLease(conversationId: string, lease: string): Promise<void> {
    await this.db.query('update conversations set lease_token = null, lease_until = null where id = $1 and lease_token = $2', [conversationId, lease]);
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
      `with opened as (
         delete from turns where id = $1 and conversation_id = $2 and status = 'running' and attempt = 1
         returning id
       ), unclaimed as (
         update inbox set turn_id = null where turn_id = (select id from opened) and consumed_at is null
       ), resumed as (
         update turns set attempt = attempt - 1 where id = $1 and conversation_id = $2 and status = 'running' and attempt > 1
       )
       update conversations set lease_token = null, lease_until = null where id = $2 and lease_token = $3`,
      [turnId, conversationId, lease],
    );
  }

  /** Records a compaction: the running summary now covers the messages up to uptoId. */
  async saveSummary(conversationId: string, uptoId: number, summary: string): Promise<boolean> {
    return (await this.db.query(`update conversations set summary = $2, summary_upto = $3 where id = $1 and summary_upto < $3`, [conversationId, summary, uptoId])).rowCount === 1;
  }

  async turn(id: string): Promise<TurnRow | undefined> {
    return (await this.db.query<TurnRow>('select * from turns where id = $1', [id])).rows[0];
  }

  async turns(conversationId: string): Promise<TurnRow[]> {
    return (await this.db.query<TurnRow>('select * from turns where conversation_id = $1 order by seq', [conversationId])).rows;
  }

  /** The assistant's reply text of a finished turn (all its assistant text, in order). */
  async turnReply(turnId: string): Promise<string> {
    const r = await this.db.query<{ content: StoredMessage }>(
      `select content from messages where turn_id = $1 and role = 'assistant' order by id`,
      [turnId],
    );
    return r.rows
      .map((m) => assistantText(m.content))
      .filter(Boolean)
      .join('\n\n');
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

  /**
   * /new: the conversation under this key is set aside (its key gets a suffix), so
   * the next message with the key starts a fresh one. The old one stays readable.
   */
  async archiveConversation(key: string): Promise<boolean> {
    return (await this.db.query(`update conversations set key = key || '#archived-' || floor(extract(epoch from now()) * 1000)::bigint where key = $1`, [key])).rowCount === 1;
  }

  /** For /status: totals of a conversation. */
  async conversationStats(key: string): Promise<{ id: string; turns: number; tokens: number; running: boolean; parked: boolean; pendingApprovals: number } | undefined> {
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

  /**
   * Full-text search over past messages visible to a sender (the conversations
   * they wrote in) — the conversation_search tool. `sender` is a canonical
   * identity, compared as a whole: the same id on another channel is someone else.
   */
  async searchMessages(query: string, opts: { sender: string; limit?: number }): Promise<Array<{ conversation_id: string; id: number; role: string; snippet: string; created_at: Date }>> {
    return (
      await this.db.query<{ conversation_id: string; id: number; role: string; snippet: string; created_at: Date }>(
        `select m.conversation_id, m.id, m.role, left(coalesce(m.content->>'content', m.content::text), 300) as snippet, m.created_at
         from messages m
         where to_tsvector('simple', coalesce(m.content->>'content', '') || ' ' || coalesce(jsonb_path_query_array(m.content, '$.content[*].text')::text, ''))
               @@ plainto_tsquery('simple', $1)
           and m.conversation_id in (select i.conversation_id from inbox i where i.sender_identity = $2)
         order by m.id desc limit $3`,
        [query, opts.sender, opts.limit ?? 10],
      )
    ).rows;
  }

  /** Steering: claims messages that arrived during the turn into it. */
  async claimInto(turnId: string, conversationId: string): Promise<InboxRow[]> {
    return (
      await this.db.query<InboxRow>(
        `update inbox set turn_id = $1 where conversation_id = $2 and turn_id is null and consumed_at is null returning *`,
        [turnId, conversationId],
      )
    ).rows.sort((a, b) => a.id - b.id);
  }

  /** Messages waiting in a conversation (not yet taken by a turn). */
  async waitingCount(conversationKey: string): Promise<{ waiting: number; running: boolean; mode: string | null }> {
    const r = await this.db.query<{ waiting: number; running: boolean; mode: string | null }>(
      `select (select count(*)::int from inbox i where i.conversation_id = c.id and i.turn_id is null and i.consumed_at is null) as waiting,
              exists (select 1 from turns t where t.conversation_id = c.id and t.status = 'running') as running,
              c.queue_mode as mode
       from conversations c where c.key = $1`,
      [conversationKey],
    );
    return r.rows[0] ?? { waiting: 0, running: false, mode: null };
  }

  async setQueueMode(conversationKey: string, mode: string): Promise<boolean> {
    return (await this.db.query('update conversations set queue_mode = $2 where key = $1', [conversationKey, mode])).rowCount === 1;
  }

  /** Recently active conversations, newest first. */
  async listConversations(limit = 50): Promise<Array<ConversationRow & { updated_at: Date; turns: number }>> {
    return (
      await this.db.query<ConversationRow & { updated_at: Date; turns: number }>(
        `select c.*, (select count(*)::int from turns t where t.conversation_id = c.id) as turns from conversations c order by c.updated_at desc limit $1`,
        [limit],
      )
    ).rows;
  }

  async ping(): Promise<void> {
    await this.db.query('select 1');
  }
}

/** The canonical identity of an inbox row's sender (computed from the row when a version before migration 010 wrote it). */
export function senderIdentity(row: Pick<InboxRow, 'channel' | 'sender' | 'sender_identity'>): string {
  return row.sender_identity ?? formatIdentity(identityOf(row));
}

export function assistantText(m: StoredMessage): string {
  const content = (m as { content?: unknown }).content as Array<{ type: string; text?: string }> | string | undefined;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((c) => c.type === 'text')
    .map((c) => c.text ?? '')
    .join('');
}

/** A conversation row that came back as JSON; the lease columns stay in the store. */
function conversationFromJson(c: ConversationRow & { created_at: string | Date; lease_token?: unknown; lease_until?: unknown }): ConversationRow {
  const { lease_token: _t, lease_until: _u, ...rest } = c;
  return { ...rest, created_at: new Date(c.created_at) };
}

/** An inbox row that came back inside a json_agg: restore the types pg would give. */
function inboxFromJson(p: InboxRow): InboxRow {
  return { ...p, id: Number(p.id), received_at: new Date(p.received_at), consumed_at: p.consumed_at ? new Date(p.consumed_at) : null };
}
