import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../db/port.js';
import {
  type HandbackResult,
  type HandoffMessage,
  type HandoffRecord,
  type HandoffRepository,
  type HandoffState,
  type HandoffUrgency,
  type NewHandoffRequest,
  SLA_NOTICE_LEASE_MS,
  type TakeResult,
} from './ports/handoffs.js';

export type { HandoffRecord, HandoffRepository } from './ports/handoffs.js';

const ISO = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const SELECT = `select h.id, h.conversation_id, c.key, c.channel, h.state, h.reason, h.urgency, h.requested_by, h.operator,
    ${ISO('h.requested_at')} as requested_at, ${ISO('h.taken_at')} as taken_at, ${ISO('h.returned_at')} as returned_at, h.returned_by, h.note,
    ${ISO('h.sla_deadline')} as sla_deadline, ${ISO('h.sla_fired_at')} as sla_fired_at
  from handoffs h join conversations c on c.id = h.conversation_id`;

interface HandoffRow {
  id: string;
  conversation_id: string;
  key: string;
  channel: string;
  state: HandoffState;
  reason: string | null;
  urgency: HandoffUrgency;
  requested_by: string;
  operator: string | null;
  requested_at: string;
  taken_at: string | null;
  returned_at: string | null;
  returned_by: string | null;
  note: string | null;
  sla_deadline: string | null;
  sla_fired_at: string | null;
}

const fromRow = (r: HandoffRow): HandoffRecord => ({
  id: r.id,
  conversationId: r.conversation_id,
  conversationKey: r.key,
  channel: r.channel,
  state: r.state,
  reason: r.reason,
  urgency: r.urgency,
  requestedBy: r.requested_by,
  operator: r.operator,
  requestedAt: r.requested_at,
  takenAt: r.taken_at,
  returnedAt: r.returned_at,
  returnedBy: r.returned_by,
  note: r.note,
  slaDeadline: r.sla_deadline,
  slaFiredAt: r.sla_fired_at,
});

const audit = (q: Queryable, actor: string, action: string, h: { id: string; conversationId: string }, details: Record<string, unknown> = {}) =>
  q.query('insert into audit (actor, action, subject, details) values ($1, $2, $3, $4)', [
    actor,
    action,
    h.id,
    JSON.stringify({ conversation: h.conversationId, ...details }),
  ]);

/**
 * Messages already waiting in the inbox (no turn has claimed them) when a conversation is taken over
 * or the agent asks for a human: they go to the operator too, not to a later turn. Consumed into the
 * handoff and copied into the transcript as the user's, oldest first.
 */
const takeWaiting = (q: Queryable, conversationId: string, handoffId: string) =>
  q.query(
    `with moved as (
       update inbox set turn_id = $2, consumed_at = now()
       where conversation_id = $1 and turn_id is null and consumed_at is null
       returning id, text, sender_identity, received_at
     )
     insert into messages (conversation_id, turn_id, role, content)
     select $1, null, 'user', jsonb_build_object('role', 'user',
                                                 -- as text.ts defuseMarkers: a user's line that starts like the gateway's own is marked as theirs
                                                 'content', regexp_replace(text, '^([ \\t]*)(\\[(gateway note|operator)\\M)', '\\1(the user wrote:) \\2', 'gin'),
                                                 'timestamp', floor(extract(epoch from received_at) * 1000)::bigint,
                                                 'author', sender_identity, 'text', text, 'handoff', $3::text, 'waiting', true)
     from moved order by id`,
    [conversationId, `handoff:${handoffId}`, handoffId],
  );

const isUniqueViolation = (err: unknown) => (err as { code?: string })?.code === '23505';

/** Handoffs in plain SQL (Postgres and PGlite); every state change is written with its audit-ledger row in one transaction. */
export class HandoffStore implements HandoffRepository {
  constructor(private readonly db: Db) {}

  private async one(q: Queryable, where: string, params: unknown[]): Promise<HandoffRecord | undefined> {
    const r = await q.query<HandoffRow>(`${SELECT} where ${where}`, params);
    return r.rows[0] && fromRow(r.rows[0]);
  }

  open(conversationId: string): Promise<HandoffRecord | undefined> {
    return this.one(this.db, `h.conversation_id = $1 and h.state in ('requested', 'taken')`, [conversationId]);
  }

  get(id: string): Promise<HandoffRecord | undefined> {
    return this.one(this.db, 'h.id = $1', [id]);
  }

  async list(opts: { recent?: number } = {}): Promise<HandoffRecord[]> {
    const open = await this.db.query<HandoffRow>(
      `${SELECT} where h.state in ('requested', 'taken') order by case when h.state = 'requested' then 0 else 1 end, h.requested_at`,
    );
    const closed = opts.recent
      ? await this.db.query<HandoffRow>(
          `${SELECT} where h.state in ('returned', 'expired') order by coalesce(h.returned_at, h.sla_fired_at, h.requested_at) desc limit $1`,
          [opts.recent],
        )
      : { rows: [] as HandoffRow[] };
    return [...open.rows, ...closed.rows].map(fromRow);
  }

  async request(r: NewHandoffRequest): Promise<{ handoff: HandoffRecord; created: boolean }> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.db.transaction(async (tx) => {
          const existing = await this.one(tx, `h.conversation_id = $1 and h.state in ('requested', 'taken')`, [r.conversationId]);
          if (existing) return { handoff: existing, created: false };
          const id = 'ho_' + randomUUID();
          await tx.query(
            `insert into handoffs (id, conversation_id, state, reason, urgency, requested_by, sla_deadline) values ($1, $2, 'requested', $3, $4, $5, $6)`,
            [id, r.conversationId, r.reason, r.urgency, r.requestedBy, r.slaDeadline],
          );
          // Metadata only: the reason is the agent's words about the user, so it stays out of the ledger.
          await audit(
            tx,
            r.requestedBy,
            'handoff.requested',
            { id, conversationId: r.conversationId },
            { urgency: r.urgency, sla: r.slaDeadline?.toISOString() ?? null },
          );
          return { handoff: (await this.one(tx, 'h.id = $1', [id]))!, created: true };
        });
      } catch (err) {
        // A concurrent request or takeover opened one first: read it.
        if (isUniqueViolation(err) && attempt < 2) continue;
        throw err;
      }
    }
  }

  async take(conversationId: string, operator: string): Promise<TakeResult> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.db.transaction(async (tx): Promise<TakeResult> => {
          const open = await this.one(tx, `h.conversation_id = $1 and h.state in ('requested', 'taken') for update of h`, [conversationId]);
          if (open?.state === 'taken') return { ok: false, code: 'already_taken', handoff: open };
          let id: string;
          if (open) {
            id = open.id;
            const u = await tx.query(`update handoffs set state = 'taken', operator = $2, taken_at = now() where id = $1 and state = 'requested'`, [
              id,
              operator,
            ]);
            if (u.rowCount !== 1) throw Object.assign(new Error('handoff changed'), { code: '23505' });
          } else {
            id = 'ho_' + randomUUID();
            await tx.query(`insert into handoffs (id, conversation_id, state, requested_by, operator, taken_at) values ($1, $2, 'taken', $3, $3, now())`, [
              id,
              conversationId,
              operator,
            ]);
          }
          await takeWaiting(tx, conversationId, id);
          await audit(tx, operator, 'handoff.taken', { id, conversationId }, { requested: !!open });
          return { ok: true, handoff: (await this.one(tx, 'h.id = $1', [id]))!, wasRequested: !!open };
        });
      } catch (err) {
        if (isUniqueViolation(err) && attempt < 2) continue;
        throw err;
      }
    }
  }

  async handback(conversationId: string, by: string, note: string | null, noteMessage: (h: HandoffRecord) => Record<string, unknown>): Promise<HandbackResult> {
    return this.db.transaction(async (tx): Promise<HandbackResult> => {
      const u = await tx.query<{ id: string }>(
        `update handoffs set state = 'returned', returned_at = now(), returned_by = $2, note = $3
         where conversation_id = $1 and state in ('requested', 'taken') returning id`,
        [conversationId, by, note],
      );
      const id = u.rows[0]?.id;
      if (!id) return { ok: false, code: 'not_taken_over' };
      const h = (await this.one(tx, 'h.id = $1', [id]))!;
      await tx.query(`insert into messages (conversation_id, turn_id, role, content) values ($1, null, 'note', $2)`, [
        conversationId,
        JSON.stringify(noteMessage(h)),
      ]);
      await audit(tx, by, 'handoff.returned', h, { operator: h.operator, note: note !== null });
      return { ok: true, handoff: h };
    });
  }

  async record(
    handoffId: string,
    conversationId: string,
    m: HandoffMessage,
  ): Promise<{ duplicate: boolean; messageId: number | null; first: boolean; closed?: boolean }> {
    return this.db.transaction(async (tx) => {
      const marker = `handoff:${handoffId}`;
      // The caller saw the handoff open a moment ago; a handback may have committed since. The row lock
      // orders this write against handback's update: a message written first is in the handoff (before
      // the handback note, passed on to the operator); one arriving after the handback writes nothing and
      // is the agent's again. Without it the message went into a closed handoff: neither relayed nor answered.
      const still = await tx.query<{ state: string }>('select state from handoffs where id = $1 for share', [handoffId]);
      const state = still.rows[0]?.state;
      if (state !== 'requested' && state !== 'taken') {
        // A redelivery of a message this handoff recorded while open is still that message (nothing again).
        const known = m.inbox
          ? (await tx.query('select 1 from inbox where channel = $1 and external_id = $2', [m.inbox.channel, m.inbox.externalId])).rows.length > 0
          : false;
        return known ? { duplicate: true, messageId: null, first: false } : { duplicate: false, messageId: null, first: false, closed: true };
      }
      let first = false;
      if (m.inbox) {
        const i = m.inbox;
        if (m.role === 'user')
          first = !(
            await tx.query(
              `select 1 from messages where conversation_id = $1 and role = 'user' and content->>'handoff' = $2 and not content ? 'waiting' limit 1`,
              [conversationId, handoffId],
            )
          ).rows.length;
        const ins = await tx.query<{ id: number }>(
          `insert into inbox (conversation_id, channel, external_id, sender, text, attachments, reply_to, received_at, sender_identity, turn_id, consumed_at)
           values ($1, $2, $3, $4, $5, '[]', $6, $7, $8, $9, now())
           on conflict (channel, external_id) do nothing returning id`,
          [
            conversationId,
            i.channel,
            i.externalId,
            JSON.stringify(i.sender),
            String(m.content.text ?? ''),
            i.replyTo ? JSON.stringify(i.replyTo) : null,
            i.receivedAt,
            i.senderIdentity,
            marker,
          ],
        );
        if (!ins.rows.length) return { duplicate: true, messageId: null, first: false };
        await tx.query('update conversations set updated_at = now() where id = $1', [conversationId]);
      } else if (m.role === 'user') first = true;
      const r = await tx.query<{ id: number }>(`insert into messages (conversation_id, turn_id, role, content) values ($1, null, $2, $3) returning id`, [
        conversationId,
        m.role,
        JSON.stringify(m.content),
      ]);
      return { duplicate: false, messageId: Number(r.rows[0]!.id), first };
    });
  }

  async expireDue(
    now: Date,
    resume: boolean,
    message: (h: HandoffRecord) => Record<string, unknown>,
    limit = 20,
    noticeLeaseUntil = new Date(now.getTime() + SLA_NOTICE_LEASE_MS),
  ): Promise<HandoffRecord[]> {
    return this.db.transaction(async (tx) => {
      // One statement claims each due request: a second worker's update finds sla_fired_at set and takes nothing.
      // The same statement leases the user's notice to this worker (migration 030): unsent past the lease, any sweep sends it.
      const u = await tx.query<{ id: string }>(
        `update handoffs set sla_fired_at = $1, state = case when $2::boolean then 'expired' else state end, sla_notice_lease_until = $4
         where id in (select id from handoffs where state = 'requested' and sla_fired_at is null and sla_deadline <= $1 order by sla_deadline limit $3)
           and state = 'requested' and sla_fired_at is null
         returning id`,
        [now, resume, limit, noticeLeaseUntil],
      );
      const out: HandoffRecord[] = [];
      for (const { id } of u.rows) {
        const h = (await this.one(tx, 'h.id = $1', [id]))!;
        await tx.query(`insert into messages (conversation_id, turn_id, role, content) values ($1, null, 'note', $2)`, [
          h.conversationId,
          JSON.stringify(message(h)),
        ]);
        await audit(tx, 'gateway:sla', 'handoff.expired', h, { resume, deadline: h.slaDeadline });
        out.push(h);
      }
      return out;
    });
  }

  async claimUnsentSlaNotices(now: Date, leaseUntil: Date, limit = 20): Promise<HandoffRecord[]> {
    // One update claims each: a second sweep finds the lease in the future and takes nothing.
    const u = await this.db.query<{ id: string }>(
      `update handoffs set sla_notice_lease_until = $2
       where id in (select id from handoffs where sla_fired_at is not null and sla_notice_sent_at is null
                      and (sla_notice_lease_until is null or sla_notice_lease_until <= $1) order by sla_fired_at limit $3)
         and sla_notice_sent_at is null and (sla_notice_lease_until is null or sla_notice_lease_until <= $1)
       returning id`,
      [now, leaseUntil, limit],
    );
    const out: HandoffRecord[] = [];
    for (const { id } of u.rows) {
      const h = await this.get(id);
      if (h) out.push(h);
    }
    return out;
  }

  async slaNoticeSent(id: string): Promise<void> {
    await this.db.query('update handoffs set sla_notice_sent_at = now() where id = $1 and sla_notice_sent_at is null', [id]);
  }

  async replyTarget(conversationId: string): Promise<number | undefined> {
    const r = await this.db.query<{ id: number }>('select id from inbox where conversation_id = $1 and reply_to is not null order by id desc limit 1', [
      conversationId,
    ]);
    return r.rows[0] ? Number(r.rows[0].id) : undefined;
  }
}
