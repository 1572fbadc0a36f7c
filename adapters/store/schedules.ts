import { randomBytes } from 'node:crypto';
import type { Db } from '../db/port.js';
import type {
  FiredSince,
  NewSchedule,
  PendingRun,
  RunRecord,
  RunStatus,
  ScheduleKind,
  ScheduleRecord,
  ScheduleRepository,
  SettableRunStatus,
} from './ports/schedules.js';

export type { NewSchedule, PendingRun, RunRecord, RunStatus, ScheduleKind, ScheduleRecord, ScheduleRepository };

const ISO = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The run's status as the operator sees it: the stored one, or (once queued) what its turn and deliveries say. */
const RUN_STATUS = `case when r.status = 'reported_undelivered' then 'undelivered' when r.status = 'firing' then 'pending' when r.status <> 'enqueued' then r.status else (
    select case
      when i.turn_id is null then 'running'
      when exists (select 1 from delivery_dead_letters d where d.turn_id = i.turn_id) then 'undelivered'
      when t.status = 'failed' then 'failed'
      when exists (select 1 from messages m where m.turn_id = i.turn_id and m.role = 'assistant' and m.content::text like '%NOTHING\\_TO\\_SAY%') then 'nothing_to_say'
      when exists (select 1 from deliveries dl where dl.turn_id = i.turn_id and dl.state in ('delivered', 'sent', 'posted')) then 'delivered'
      when t.finished_at is null then 'running'
      else 'delivering' end
    from inbox i left join turns t on t.id = i.turn_id where i.id = r.inbox_id) end`;

interface ScheduleRow {
  id: string;
  conversation_id: string;
  key: string;
  channel: string;
  kind: ScheduleKind;
  cron: string | null;
  at: string | null;
  tz: string;
  prompt: string;
  runs_per_day: number | null;
  tokens_per_day: number | null;
  check_prompt: string | null;
  next_at: string | null;
  created_by: string;
  created_at: string;
  last_tick: string | null;
  last_status: RunStatus | null;
  last_at: string | null;
}

const SELECT_SCHEDULE = `select s.id, s.conversation_id, c.key, c.channel, s.kind, s.cron, ${ISO('s.at')} as at, s.tz, s.prompt, s.runs_per_day, s.tokens_per_day, s.check_prompt,
    ${ISO('s.next_at')} as next_at, s.created_by, ${ISO('s.created_at')} as created_at,
    ${ISO('lr.tick_at')} as last_tick, lr.status as last_status, ${ISO('lr.created_at')} as last_at
  from schedules s join conversations c on c.id = s.conversation_id
  left join lateral (select r.tick_at, r.created_at, ${RUN_STATUS} as status from schedule_runs r where r.schedule_id = s.id order by r.tick_at desc limit 1) lr on true`;

const fromRow = (r: ScheduleRow): ScheduleRecord => ({
  id: r.id,
  conversationId: r.conversation_id,
  conversationKey: r.key,
  channel: r.channel,
  kind: r.kind,
  cron: r.cron,
  at: r.at,
  tz: r.tz,
  prompt: r.prompt,
  runsPerDay: r.runs_per_day,
  tokensPerDay: r.tokens_per_day,
  check: r.check_prompt,
  nextAt: r.next_at,
  createdBy: r.created_by,
  createdAt: r.created_at,
  lastRun: r.last_tick && r.last_status && r.last_at ? { tick: r.last_tick, status: r.last_status, at: r.last_at } : null,
});

/** Schedules and their runs (adapters/store/migrations/024_schedules.sql), on Postgres and PGlite. */
export class ScheduleStore implements ScheduleRepository {
  constructor(readonly db: Db) {}

  /** Creates a schedule and writes `schedule.created` to the audit ledger in the same transaction. */
  async create(s: NewSchedule): Promise<ScheduleRecord> {
    const id = `sch_${randomBytes(6).toString('hex')}`;
    await this.db.transaction(async (tx) => {
      await tx.query(
        `insert into schedules (id, conversation_id, kind, cron, at, tz, prompt, runs_per_day, next_at, created_by, tokens_per_day, check_prompt)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [
          id,
          s.conversationId,
          s.kind,
          s.cron ?? null,
          s.at ?? null,
          s.tz,
          s.prompt,
          s.runsPerDay ?? null,
          s.nextAt,
          s.createdBy,
          s.tokensPerDay ?? null,
          s.check ?? null,
        ],
      );
      await tx.query('insert into audit (actor, action, subject, details) values ($1, $2, $3, $4)', [
        s.createdBy,
        'schedule.created',
        id,
        JSON.stringify({ conversation: s.conversationId, kind: s.kind, cron: s.cron ?? null, at: s.at?.toISOString() ?? null, tz: s.tz }),
      ]);
    });
    return (await this.get(id))!;
  }

  async get(id: string): Promise<ScheduleRecord | undefined> {
    const r = await this.db.query<ScheduleRow>(`${SELECT_SCHEDULE} where s.id = $1`, [id]);
    return r.rows[0] ? fromRow(r.rows[0]) : undefined;
  }

  async list(conversationId?: string): Promise<ScheduleRecord[]> {
    const r = conversationId
      ? await this.db.query<ScheduleRow>(`${SELECT_SCHEDULE} where s.conversation_id = $1 order by s.created_at, s.id`, [conversationId])
      : await this.db.query<ScheduleRow>(`${SELECT_SCHEDULE} order by s.created_at, s.id`);
    return r.rows.map(fromRow);
  }

  /** Deletes a schedule (and its runs) with `schedule.deleted` in the audit ledger; false when there was none. */
  async remove(id: string, by: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const r = await tx.query<{ conversation_id: string }>('delete from schedules where id = $1 returning conversation_id', [id]);
      if (!r.rows[0]) return false;
      await tx.query('insert into audit (actor, action, subject, details) values ($1, $2, $3, $4)', [
        by,
        'schedule.deleted',
        id,
        JSON.stringify({ conversation: r.rows[0].conversation_id }),
      ]);
      return true;
    });
  }

  async runs(scheduleId: string, limit = 50): Promise<RunRecord[]> {
    const r = await this.db.query<{
      id: string;
      schedule_id: string;
      tick: string;
      due_at: string;
      status: RunStatus;
      coalesced: number;
      turn_id: string | null;
    }>(
      `select r.id, r.schedule_id, ${ISO('r.tick_at')} as tick, ${ISO('r.due_at')} as due_at, ${RUN_STATUS} as status, r.coalesced,
         (select turn_id from inbox where id = r.inbox_id) as turn_id
       from schedule_runs r where r.schedule_id = $1 order by r.tick_at desc limit $2`,
      [scheduleId, limit],
    );
    return r.rows.map((x) => ({
      id: Number(x.id),
      scheduleId: x.schedule_id,
      tick: x.tick,
      dueAt: x.due_at,
      status: x.status,
      coalesced: x.coalesced,
      turnId: x.turn_id,
    }));
  }

  /** Schedules whose next tick is due at `now`. */
  async due(now: Date, limit = 100): Promise<Array<{ id: string; kind: ScheduleKind; cron: string | null; tz: string; nextAt: Date }>> {
    const r = await this.db.query<{ id: string; kind: ScheduleKind; cron: string | null; tz: string; next_at: Date }>(
      'select id, kind, cron, tz, next_at from schedules where next_at is not null and next_at <= $1 order by next_at limit $2',
      [now, limit],
    );
    return r.rows.map((x) => ({ id: x.id, kind: x.kind, cron: x.cron, tz: x.tz, nextAt: new Date(x.next_at) }));
  }

  /**
   * Claims one tick in one statement: the run row for (schedule, tick) is written by exactly one
   * caller, however many workers see the tick, and the schedule moves on to `next` only if it still
   * was at `tick`. Returns whether this caller won.
   */
  async claimTick(scheduleId: string, tick: Date, next: Date | null, run: { dueAt: Date; status: 'pending' | 'skipped'; coalesced: number }): Promise<boolean> {
    const r = await this.db.query<{ id: string }>(
      `with moved as (
         update schedules set next_at = $5 where id = $1 and next_at = $2 returning id
       )
       insert into schedule_runs (schedule_id, tick_at, due_at, status, coalesced)
       select id, $2, $3, $4, $6 from moved
       on conflict (schedule_id, tick_at) do nothing
       returning id`,
      [scheduleId, tick, run.dueAt, run.status, next, run.coalesced],
    );
    return r.rows.length === 1;
  }

  /** Takes the pending runs due at `now`, each by one caller only (status moves off pending in the same statement). */
  async takeDue(now: Date, limit = 20): Promise<PendingRun[]> {
    const r = await this.db.query<{
      id: string;
      schedule_id: string;
      tick_at: Date;
      coalesced: number;
      conversation_id: string;
      key: string;
      channel: string;
      owner: string | null;
      agent: string;
      prompt: string;
      tz: string;
      runs_per_day: number | null;
      tokens_per_day: number | null;
      check_prompt: string | null;
    }>(
      `with taken as (
         update schedule_runs set status = 'firing', fired_at = $1
         where id in (select id from schedule_runs where status = 'pending' and due_at <= $1 order by due_at limit $2 for update skip locked)
           and status = 'pending'
         returning id, schedule_id, tick_at, coalesced
       )
       select t.id, t.schedule_id, t.tick_at, t.coalesced, s.conversation_id, c.key, c.channel, c.owner, c.agent, s.prompt, s.tz, s.runs_per_day, s.tokens_per_day, s.check_prompt
       from taken t join schedules s on s.id = t.schedule_id join conversations c on c.id = s.conversation_id`,
      [now, limit],
    );
    return r.rows.map((x) => ({
      id: Number(x.id),
      scheduleId: x.schedule_id,
      tick: new Date(x.tick_at),
      coalesced: x.coalesced,
      conversationId: x.conversation_id,
      conversationKey: x.key,
      channel: x.channel,
      owner: x.owner,
      agent: x.agent,
      prompt: x.prompt,
      tz: x.tz,
      runsPerDay: x.runs_per_day,
      tokensPerDay: x.tokens_per_day,
      check: x.check_prompt,
    }));
  }

  /**
   * Runs that fired (queued a turn) since `since`, of this schedule and of every schedule of its
   * conversation, the tokens their turns used (turns.usage totals), and how many of them are still
   * queued or running (their tokens are not known yet).
   */
  async firedSince(scheduleId: string, conversationId: string, since: Date): Promise<FiredSince> {
    const r = await this.db.query<{
      schedule: string;
      recipient: string;
      schedule_tokens: string | null;
      recipient_tokens: string | null;
      schedule_running: string;
      recipient_running: string;
    }>(
      `select count(*) filter (where r.schedule_id = $1) as schedule, count(*) as recipient,
         sum(coalesce((t.usage->>'totalTokens')::bigint, 0)) filter (where r.schedule_id = $1) as schedule_tokens,
         sum(coalesce((t.usage->>'totalTokens')::bigint, 0)) as recipient_tokens,
         count(*) filter (where r.schedule_id = $1 and r.status = 'enqueued' and t.finished_at is null) as schedule_running,
         count(*) filter (where r.status = 'enqueued' and t.finished_at is null) as recipient_running
       from schedule_runs r join schedules s on s.id = r.schedule_id
       left join inbox i on i.id = r.inbox_id left join turns t on t.id = i.turn_id
       where s.conversation_id = $2 and r.status in ('enqueued', 'firing', 'reported_undelivered') and r.fired_at >= $3`,
      [scheduleId, conversationId, since],
    );
    const x = r.rows[0];
    return {
      schedule: Number(x?.schedule ?? 0),
      recipient: Number(x?.recipient ?? 0),
      scheduleTokens: Number(x?.schedule_tokens ?? 0),
      recipientTokens: Number(x?.recipient_tokens ?? 0),
      scheduleRunning: Number(x?.schedule_running ?? 0),
      recipientRunning: Number(x?.recipient_running ?? 0),
    };
  }

  async setRun(id: number, fields: { status: SettableRunStatus; dueAt?: Date; inboxId?: number }): Promise<void> {
    await this.db.query('update schedule_runs set status = $2, due_at = coalesce($3, due_at), inbox_id = coalesce($4, inbox_id) where id = $1', [
      id,
      fields.status,
      fields.dueAt ?? null,
      fields.inboxId ?? null,
    ]);
  }

  /** Runs left 'firing' by a worker that stopped between taking and queueing them, older than `before`: back to pending (the inbox dedupes a second write). */
  async reclaimStale(before: Date): Promise<number> {
    const r = await this.db.query("update schedule_runs set status = 'pending' where status = 'firing' and fired_at < $1 returning id", [before]);
    return r.rows.length;
  }

  /** Runs whose turn answered but whose reply was dead-lettered and not yet reported. */
  async undelivered(): Promise<RunRecord[]> {
    const r = await this.db.query<{ id: string; schedule_id: string; tick: string; due_at: string; coalesced: number; turn_id: string }>(
      `update schedule_runs r set status = 'reported_undelivered'
       from inbox i where i.id = r.inbox_id and r.status = 'enqueued'
         and exists (select 1 from delivery_dead_letters d where d.turn_id = i.turn_id)
       returning r.id, r.schedule_id, ${ISO('r.tick_at')} as tick, ${ISO('r.due_at')} as due_at, r.coalesced, i.turn_id`,
    );
    return r.rows.map((x) => ({
      id: Number(x.id),
      scheduleId: x.schedule_id,
      tick: x.tick,
      dueAt: x.due_at,
      status: 'undelivered',
      coalesced: x.coalesced,
      turnId: x.turn_id,
    }));
  }

  /** Where the conversation's last message came from: a run's reply goes to the same place. */
  async lastReplyTo(conversationId: string): Promise<Record<string, unknown> | undefined> {
    const r = await this.db.query<{ reply_to: Record<string, unknown> | null }>(
      `select reply_to from inbox where conversation_id = $1 and reply_to is not null and external_id not like 'schedule:%' order by id desc limit 1`,
      [conversationId],
    );
    return r.rows[0]?.reply_to ?? undefined;
  }
}
