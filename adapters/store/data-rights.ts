import { createHash } from 'node:crypto';
import { SwitchboardError } from '../../kernel/errors.js';
import type { Db, Queryable } from '../db/port.js';
import type { ConversationExport, DataRightsRepository, ErasureReport, ExportedMessage } from './ports/data-rights.js';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** What an erased sender's messages in a shared conversation become. */
export const ERASED_TEXT = '[erased at the sender’s request]';

type Part = { type: string; text?: string; id?: string; name?: string; arguments?: unknown };

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Part[])
    .filter((p) => p.type === 'text')
    .map((p) => p.text ?? '')
    .join('');
}

export class DataRightsStore implements DataRightsRepository {
  constructor(private readonly db: Db) {}

  async exportConversation(id: string): Promise<ConversationExport | undefined> {
    const c = (
      await this.db.query<{ id: string; key: string; channel: string; agent: string; created_at: Date }>('select * from conversations where id = $1', [id])
    ).rows[0];
    if (!c) return undefined;
    const inbox = (
      await this.db.query<{ turn_id: string | null; sender_identity: string | null; sender: { id?: string } }>(
        'select turn_id, sender_identity, sender from inbox where conversation_id = $1 order by id',
        [id],
      )
    ).rows;
    // A turn's user messages are its inbox rows, in order (src/turn/messages.ts): that is who said them.
    const authors = new Map<string, string[]>();
    for (const r of inbox) {
      const who = r.sender_identity ?? `${c.channel}:${r.sender?.id ?? 'unknown'}`;
      if (r.turn_id) authors.set(r.turn_id, [...(authors.get(r.turn_id) ?? []), who]);
    }
    const used = new Map<string, number>();
    const rows = (
      await this.db.query<{ id: string; turn_id: string | null; role: string; content: Record<string, unknown>; created_at: Date }>(
        'select id, turn_id, role, content, created_at from messages where conversation_id = $1 order by id',
        [id],
      )
    ).rows;
    const messages: ExportedMessage[] = rows.map((r) => {
      const base = { id: Number(r.id), at: iso(r.created_at)!, turn: r.turn_id };
      const m = r.content;
      // A message of a taken-over time (src/handoffs/): its author is on the message; an operator's or the gateway's note exports as such.
      if (typeof m.handoff === 'string' && typeof m.author === 'string') {
        const role = r.role === 'operator' ? 'operator' : r.role === 'note' ? 'note' : 'user';
        return { ...base, role, author: m.author, text: typeof m.text === 'string' ? m.text : textOf(m.content) };
      }
      if (r.role === 'user') {
        const list = (r.turn_id && authors.get(r.turn_id)) || [];
        const n = used.get(r.turn_id ?? '') ?? 0;
        used.set(r.turn_id ?? '', n + 1);
        return { ...base, role: 'user', author: list[Math.min(n, list.length - 1)] ?? 'system', text: textOf(m.content) };
      }
      if (r.role === 'toolResult')
        return {
          ...base,
          role: 'tool',
          author: String(m.toolName ?? 'tool'),
          text: textOf(m.content),
          toolCallId: String(m.toolCallId ?? ''),
          isError: m.isError === true,
        };
      const calls = Array.isArray(m.content)
        ? (m.content as Part[]).filter((p) => p.type === 'toolCall').map((p) => ({ id: p.id ?? '', name: p.name ?? '', arguments: p.arguments }))
        : [];
      return { ...base, role: 'assistant', author: `agent:${c.agent}`, text: textOf(m.content), ...(calls.length ? { toolCalls: calls } : {}) };
    });
    const approvals = (
      await this.db.query<Record<string, unknown>>('select * from approvals where conversation_id = $1 order by created_at, id', [id])
    ).rows.map((a) => ({
      code: String(a.code),
      tool: String(a.tool),
      arguments: a.args,
      tier: String(a.tier),
      status: String(a.status),
      requester: (a.requester as string | null) ?? null,
      decidedBy: (a.decided_by as string | null) ?? null,
      decidedVia: (a.decided_via as string | null) ?? null,
      decidedAt: iso(a.decided_at as Date | null),
      createdAt: iso(a.created_at as Date)!,
    }));
    const turns = (
      await this.db.query<{
        id: string;
        seq: number;
        status: string;
        finish_reason: string | null;
        started_at: Date;
        finished_at: Date | null;
        usage: unknown;
      }>('select id, seq, status, finish_reason, started_at, finished_at, usage from turns where conversation_id = $1 order by seq', [id])
    ).rows.map((t) => ({
      id: t.id,
      seq: t.seq,
      status: t.status,
      finishReason: t.finish_reason,
      startedAt: iso(t.started_at)!,
      finishedAt: iso(t.finished_at),
      usage: t.usage,
    }));
    const usage = { input: 0, output: 0, totalTokens: 0, costUsd: 0 };
    for (const t of turns) {
      const u = (t.usage ?? {}) as { input?: unknown; output?: unknown; totalTokens?: unknown; cost?: { total?: unknown }; costUsd?: unknown };
      usage.input += num(u.input);
      usage.output += num(u.output);
      usage.totalTokens += num(u.totalTokens);
      usage.costUsd += num(u.cost?.total ?? u.costUsd);
    }
    const senders = [...new Set(messages.filter((m) => m.role === 'user' && m.author !== 'system').map((m) => m.author))];
    return {
      conversation: { id: c.id, key: c.key, channel: c.channel, agent: c.agent, createdAt: iso(c.created_at)! },
      senders,
      messages,
      approvals,
      turns,
      usage,
    };
  }

  async conversationsOf(sender: string): Promise<string[]> {
    const r = await this.db.query<{ id: string }>(
      `select c.id from conversations c where exists (select 1 from inbox i where i.conversation_id = c.id and i.sender_identity = $1) order by c.created_at, c.id`,
      [sender],
    );
    return r.rows.map((x) => x.id);
  }

  async allConversations(): Promise<string[]> {
    return (await this.db.query<{ id: string }>('select id from conversations order by created_at, id')).rows.map((x) => x.id);
  }

  eraseConversation(id: string, by: string): Promise<ErasureReport> {
    return this.db.transaction(async (tx) => {
      const rows = await eraseConversationOn(tx, id);
      if (!rows) return { conversations: [], rows: {} };
      await audit(tx, by, 'erasure.conversation', id, { rows });
      return { conversations: [id], rows };
    });
  }

  eraseSender(sender: string, by: string): Promise<ErasureReport> {
    return this.db.transaction(async (tx) => {
      const total: Record<string, number> = {};
      const add = (r: Record<string, number>) => {
        for (const [k, v] of Object.entries(r)) total[k] = (total[k] ?? 0) + v;
      };
      // Conversations only this sender wrote in go whole.
      const alone = (
        await tx.query<{ id: string }>(
          `select conversation_id as id from inbox group by conversation_id
           having bool_and(sender_identity = $1) order by conversation_id`,
          [sender],
        )
      ).rows.map((r) => r.id);
      for (const id of alone) add((await eraseConversationOn(tx, id)) ?? {});
      // In shared ones: their messages become a marker, their inbox rows (and replayable outcomes) go.
      const marked = await tx.query(
        `update messages m set content = jsonb_set(m.content, '{content}', to_jsonb($2::text))
         where m.role = 'user' and m.turn_id in (select turn_id from inbox where sender_identity = $1 and turn_id is not null)
           and not exists (select 1 from inbox o where o.turn_id = m.turn_id and o.sender_identity is distinct from $1)`,
        [sender, ERASED_TEXT],
      );
      add({ messages_erased: marked.rowCount });
      // Their messages of a taken-over time (src/handoffs/: no turn; who said it is the message's author): text and author go.
      const relayed = await tx.query(
        `update messages set content = jsonb_set(jsonb_set(jsonb_set(content, '{content}', to_jsonb($2::text)), '{text}', to_jsonb($2::text)),
                                                 '{author}', to_jsonb($3::text))
         where content ? 'handoff' and content->>'author' = $1`,
        [sender, ERASED_TEXT, '[erased]'],
      );
      add({ messages_erased: relayed.rowCount });
      // An operator (or a user who asked) named on handoffs of conversations that stay: who they were goes, the
      // handoff's times and state stay; the handback and SLA notes that name them lose the name too.
      const ERASED_WHO = '[erased]';
      add({
        handoffs: (
          await tx.query(
            `update handoffs set operator = case when operator = $1 then $2 else operator end,
                                 returned_by = case when returned_by = $1 then $2 else returned_by end,
                                 requested_by = case when requested_by = $1 then $2 else requested_by end
             where $1 in (operator, returned_by, requested_by)`,
            [sender, ERASED_WHO],
          )
        ).rowCount,
      });
      add({
        messages_erased: (
          await tx.query(
            `update messages set content = jsonb_set(jsonb_set(content, '{content}', to_jsonb(replace(content->>'content', $1, $2))),
                                                     '{text}', to_jsonb(replace(coalesce(content->>'text', ''), $1, $2)))
             where role = 'note' and content ? 'handoff' and strpos(content->>'content', $1) > 0`,
            [sender, ERASED_WHO],
          )
        ).rowCount,
      });
      add({
        ingress_outcomes: (
          await tx.query(
            'delete from ingress_outcomes o using inbox i where i.sender_identity = $1 and o.channel = i.channel and o.external_id = i.external_id',
            [sender],
          )
        ).rowCount,
      });
      add({ inbox: (await tx.query('delete from inbox where sender_identity = $1', [sender])).rowCount });
      add({ memory: (await tx.query(`delete from memory where scope = 'sender' and scope_key = $1`, [sender])).rowCount });
      add({ allow_rules: (await tx.query(`delete from allow_rules where scope = 'sender' and scope_key = $1`, [sender])).rowCount });
      add({ approvals_requester: (await tx.query('update approvals set requester = null where requester = $1', [sender])).rowCount });
      const colon = sender.indexOf(':');
      if (colon > 0) {
        const channel = sender.slice(0, colon);
        const local = sender.slice(colon + 1);
        const bare = local.includes(':') ? local.slice(local.lastIndexOf(':') + 1) : local;
        add({ access: (await tx.query('delete from access where channel = $1 and sender in ($2, $3)', [channel, local, bare])).rowCount });
      }
      const subject = `sender:${createHash('sha256').update(sender).digest('hex').slice(0, 32)}`;
      await audit(tx, by, 'erasure.sender', subject, { conversations: alone.length, rows: total });
      return { conversations: alone, rows: total };
    });
  }
}

/** A conversation whose turn is running is not erased under it: asked again once the turn has ended. */
export class ConversationBusyError extends SwitchboardError {
  readonly code = 'conversation_busy';
  override readonly retryable = true;
  constructor(readonly conversationId: string) {
    super(`conversation ${conversationId} has a turn running; erase it again when the turn has ended`);
  }
}

/** Deletes one conversation's rows, children first; undefined when there is no such conversation. */
async function eraseConversationOn(tx: Queryable, id: string): Promise<Record<string, number> | undefined> {
  const conv = (await tx.query<{ key: string }>('select key from conversations where id = $1 for update', [id])).rows[0];
  if (!conv) return undefined;
  if ((await tx.query(`select 1 from turns where conversation_id = $1 and status = 'running'`, [id])).rowCount) throw new ConversationBusyError(id);
  const turns = `(select id from turns where conversation_id = $1)`;
  const rows: Record<string, number> = {};
  const del = async (table: string, sql: string, params: unknown[] = [id]) => {
    rows[table] = (rows[table] ?? 0) + (await tx.query(sql, params)).rowCount;
  };
  await del('turn_journal', `delete from turn_journal where turn_id in ${turns}`);
  await del('tool_results', `delete from tool_results where turn_id in ${turns}`);
  await del('deliveries', `delete from deliveries where turn_id in ${turns}`);
  await del('delivery_dead_letters', 'delete from delivery_dead_letters where conversation_id = $1');
  // What operators sent during a takeover was delivered as op_<handoff>:<message> (src/handoffs/); the handoffs themselves go too.
  await del('deliveries', `delete from deliveries where split_part(turn_id, ':', 1) in (select 'op_' || id from handoffs where conversation_id = $1)`);
  await del('handoffs', 'delete from handoffs where conversation_id = $1');
  await del('webhook_dead_letters', `delete from webhook_dead_letters where event->'data'->>'conversation' = $1 or event->>'conversation' = $1`);
  await del('approvals', 'delete from approvals where conversation_id = $1');
  await del('allow_rules', `delete from allow_rules where scope = 'conversation' and scope_key = $1`);
  await del('memory', `delete from memory where scope = 'conversation' and scope_key in ($1, $2)`, [id, conv.key]);
  await del(
    'ingress_outcomes',
    'delete from ingress_outcomes o using inbox i where i.conversation_id = $1 and o.channel = i.channel and o.external_id = i.external_id',
  );
  await del('inbox', 'delete from inbox where conversation_id = $1');
  await del('messages', 'delete from messages where conversation_id = $1');
  await del('turns', 'delete from turns where conversation_id = $1');
  await del('conversations', 'delete from conversations where id = $1');
  return rows;
}

function audit(q: Queryable, by: string, action: string, subject: string, details: unknown) {
  return q.query('insert into audit (actor, action, subject, details) values ($1, $2, $3, $4)', [by, action, subject, JSON.stringify(details)]);
}
