/**
 * Scheduled messages: a tick fires exactly once with two workers (two schedulers, each with its own
 * database connection, on Postgres and on PGlite), missed ticks coalesce into one run across a
 * restart, a run inside quiet hours waits for their end, and a run whose reply was dead-lettered
 * is reported as undelivered (never as delivered). Clocks are injected: nothing waits.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../adapters/db/pg.js';
import { openPglite } from '../adapters/db/pglite.js';
import type { Db } from '../adapters/db/port.js';
import { MemoryQueue } from '../adapters/queue/memory.js';
import { migrate } from '../adapters/store/migrate.js';
import { ScheduleStore } from '../adapters/store/schedules.js';
import { Store } from '../adapters/store/store.js';
import type { DrainJob } from '../kernel/jobs.js';
import { schedulesSchema } from '../src/schedules/config.js';
import { nextTick } from '../src/schedules/next-tick.js';
import { Scheduler } from '../src/schedules/scheduler.js';
import { createTestDatabase } from './support/postgres.js';

const log = pino({ level: 'silent' });

const backends = [
  {
    name: 'pglite',
    // One embedded database: both "workers" share it, as the in-process queue's workers do.
    open: async () => {
      const db = await openPglite();
      return { a: db, b: db, drop: () => db.close() };
    },
  },
  {
    name: 'postgres',
    open: async () => {
      const t = await createTestDatabase();
      const a = await openPostgres(t.url);
      const b = await openPostgres(t.url);
      return {
        a,
        b,
        drop: async () => {
          await a.close();
          await b.close();
          await t.drop();
        },
      };
    },
  },
] as Array<{ name: string; open(): Promise<{ a: Db; b: Db; drop(): Promise<void> }> }>;

/** A drain queue whose worker records the conversations it was asked to drain. */
function drainQueue() {
  const q = new MemoryQueue<DrainJob>({ attempts: 1, backoffMs: 10 });
  const drained: string[] = [];
  q.process(async (job) => void drained.push(job.data.conversationId), { concurrency: 1 });
  return { q, drained };
}

describe.each(backends)('schedules on $name', (backend) => {
  let a: Db;
  let b: Db;
  let drop: () => Promise<void>;
  let conversationId: string;
  beforeAll(async () => {
    ({ a, b, drop } = await backend.open());
    await migrate(a);
    const store = new Store(a);
    const accepted = await store.accept({
      channel: 'slack',
      externalId: 'ev1',
      conversationKey: 'slack:T1:C1:t1',
      sender: { id: 'U1', workspace: 'T1' },
      text: 'hello',
      attachments: [],
      replyTo: { channel: 'C1', thread: 't1' },
      receivedAt: new Date('2026-06-01T09:00:00Z'),
    });
    conversationId = accepted.conversationId;
  });
  afterAll(async () => drop());

  const scheduler = (
    db: Db,
    now: () => Date,
    q: MemoryQueue<DrainJob>,
    extra: Record<string, unknown> = {},
    undelivered?: (r: { scheduleId: string }) => void,
  ) =>
    new Scheduler({
      schedules: new ScheduleStore(db),
      accept: (msg, agent) => new Store(db).accept(msg, agent),
      queue: q,
      config: schedulesSchema.parse(extra),
      log,
      now,
      undelivered,
    });

  const every5 = async (first: string) =>
    new ScheduleStore(a).create({
      conversationId,
      kind: 'cron',
      cron: '*/5 * * * *',
      tz: 'UTC',
      prompt: 'Post the standup reminder.',
      nextAt: new Date(first),
      createdBy: 'cli',
    });

  it('fires a tick exactly once with two workers, each pass racing the other', async () => {
    const s = await every5('2026-06-01T10:00:00Z');
    const { q, drained } = drainQueue();
    let now = new Date('2026-06-01T10:00:20Z');
    const clock = () => now;
    const w1 = scheduler(a, clock, q);
    const w2 = scheduler(b, clock, q);
    for (let i = 0; i < 3; i++) await Promise.all([w1.tick(), w2.tick(), w1.tick(), w2.tick()]);
    now = new Date('2026-06-01T10:05:10Z');
    for (let i = 0; i < 3; i++) await Promise.all([w1.tick(), w2.tick()]);
    await q.close?.();

    const runs = await new ScheduleStore(a).runs(s.id);
    expect(runs.map((r) => r.tick).sort()).toEqual(['2026-06-01T10:00:00.000Z', '2026-06-01T10:05:00.000Z']);
    const inbox = await a.query<{ external_id: string; text: string; reply_to: unknown }>(
      `select external_id, text, reply_to from inbox where external_id like $1 order by id`,
      [`schedule:${s.id}:%`],
    );
    expect(inbox.rows.map((r) => r.external_id)).toEqual([`schedule:${s.id}:2026-06-01T10:00:00.000Z`, `schedule:${s.id}:2026-06-01T10:05:00.000Z`]);
    expect(inbox.rows[0]!.text).toContain('Post the standup reminder.');
    expect(inbox.rows[0]!.reply_to).toEqual({ channel: 'C1', thread: 't1' });
    expect(drained.filter((c) => c === conversationId).length).toBeGreaterThanOrEqual(1);
    expect((await new ScheduleStore(a).get(s.id))!.nextAt).toBe('2026-06-01T10:10:00.000Z');
    await new ScheduleStore(a).remove(s.id, 'cli');
  });

  it('coalesces the ticks missed while down into one run after a restart', async () => {
    const s = await every5('2026-06-02T10:00:00Z');
    const { q } = drainQueue();
    // The gateway was down from before 10:00 to 10:27: a new process starts.
    const restarted = scheduler(b, () => new Date('2026-06-02T10:27:00Z'), q);
    await restarted.tick();
    await restarted.tick();
    const runs = await new ScheduleStore(a).runs(s.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.coalesced).toBe(6); // 10:00 … 10:25
    expect((await a.query(`select text from inbox where external_id like $1`, [`schedule:${s.id}:%`])).rows[0]!.text).toContain('6 ticks were missed');
    expect((await new ScheduleStore(a).get(s.id))!.nextAt).toBe('2026-06-02T10:30:00.000Z');

    // catchUp: skip records the missed ticks as one skipped run and sends nothing.
    const s2 = await every5('2026-06-03T10:00:00Z');
    await scheduler(a, () => new Date('2026-06-03T10:27:00Z'), q, { catchUp: 'skip' }).tick();
    expect((await new ScheduleStore(a).runs(s2.id)).map((r) => r.status)).toEqual(['skipped']);
    expect((await a.query(`select 1 from inbox where external_id like $1`, [`schedule:${s2.id}:%`])).rows).toHaveLength(0);
    await q.close?.();
    await new ScheduleStore(a).remove(s.id, 'cli');
    await new ScheduleStore(a).remove(s2.id, 'cli');
  });

  it('defers a run inside quiet hours to their end in the recipient time zone', async () => {
    const at = new Date('2026-06-04T21:30:00Z'); // 23:30 in Amsterdam (CEST)
    const s = await new ScheduleStore(a).create({ conversationId, kind: 'once', at, tz: 'Europe/Amsterdam', prompt: 'Nudge.', nextAt: at, createdBy: 'cli' });
    const { q } = drainQueue();
    let now = new Date('2026-06-04T21:30:05Z');
    const w = scheduler(a, () => now, q, { quietHours: { start: '22:00', end: '07:00' } });
    await w.tick();
    let runs = await new ScheduleStore(a).runs(s.id);
    expect(runs.map((r) => [r.status, r.dueAt])).toEqual([['pending', '2026-06-05T05:00:00.000Z']]); // 07:00 CEST
    now = new Date('2026-06-05T05:00:30Z');
    await w.tick();
    runs = await new ScheduleStore(a).runs(s.id);
    expect(runs[0]!.status).toBe('running');
    expect((await new ScheduleStore(a).get(s.id))!.nextAt).toBeNull();
    await q.close?.();
    await new ScheduleStore(a).remove(s.id, 'cli');
  });

  it('keeps to the runs-per-day budget of the schedule', async () => {
    const s = await new ScheduleStore(a).create({
      conversationId,
      kind: 'cron',
      cron: '*/5 * * * *',
      tz: 'UTC',
      prompt: 'x',
      runsPerDay: 1,
      nextAt: new Date('2026-06-06T10:00:00Z'),
      createdBy: 'cli',
    });
    const { q } = drainQueue();
    let now = new Date('2026-06-06T10:00:01Z');
    const w = scheduler(a, () => now, q);
    await w.tick();
    now = new Date('2026-06-06T10:05:01Z');
    await w.tick();
    expect((await new ScheduleStore(a).runs(s.id)).map((r) => r.status)).toEqual(['over_budget', 'running']);
    await q.close?.();
    await new ScheduleStore(a).remove(s.id, 'cli');
  });

  it('reports a run whose reply was dead-lettered as undelivered, and one that declined as nothing_to_say', async () => {
    const s = await every5('2026-06-07T10:00:00Z');
    const { q } = drainQueue();
    const reported: string[] = [];
    let now = new Date('2026-06-07T10:00:01Z');
    const w = scheduler(
      a,
      () => now,
      q,
      {},
      (r) => reported.push(r.scheduleId),
    );
    await w.tick();
    now = new Date('2026-06-07T10:05:01Z');
    await w.tick();
    // The drain took both messages into turns: one answered but its delivery was given up on,
    // the other answered NOTHING_TO_SAY.
    const rows = (
      await a.query<{ id: number; external_id: string }>(`select id, external_id from inbox where external_id like $1 order by id`, [`schedule:${s.id}:%`])
    ).rows;
    for (const [i, row] of rows.entries()) {
      await a.query(`insert into turns (id, conversation_id, seq, status, finished_at) values ($1, $2, $3, 'done', now())`, [
        `t_s${i}_${s.id}`,
        conversationId,
        100 + i + Math.floor(Math.random() * 1e6),
      ]);
      await a.query(`update inbox set turn_id = $1 where id = $2`, [`t_s${i}_${s.id}`, row.id]);
    }
    await a.query(
      `insert into delivery_dead_letters (turn_id, conversation_id, channel, code, error, attempts) values ($1, $2, 'slack', 'channel_not_found', 'gone', 5)`,
      [`t_s0_${s.id}`, conversationId],
    );
    await a.query(`insert into messages (conversation_id, turn_id, role, content) values ($1, $2, 'assistant', $3)`, [
      conversationId,
      `t_s1_${s.id}`,
      JSON.stringify({ text: 'NOTHING_TO_SAY' }),
    ]);
    const statuses = async () => Object.fromEntries((await new ScheduleStore(a).runs(s.id)).map((r) => [r.tick, r.status]));
    expect(await statuses()).toEqual({ '2026-06-07T10:00:00.000Z': 'undelivered', '2026-06-07T10:05:00.000Z': 'nothing_to_say' });
    await w.tick();
    await w.tick();
    expect(reported).toEqual([s.id]); // reported once
    expect(await statuses()).toEqual({ '2026-06-07T10:00:00.000Z': 'undelivered', '2026-06-07T10:05:00.000Z': 'nothing_to_say' });
    expect((await new ScheduleStore(a).get(s.id))!.lastRun?.status).toBe('nothing_to_say');
    await q.close?.();
  });

  it('writes every create and delete to the audit ledger', async () => {
    const r = await a.query<{ action: string }>(`select action from audit where action like 'schedule.%' order by seq`);
    expect(r.rows.filter((x) => x.action === 'schedule.created').length).toBeGreaterThanOrEqual(6);
    expect(r.rows.filter((x) => x.action === 'schedule.deleted').length).toBeGreaterThanOrEqual(4);
  });
});

describe('next tick', () => {
  it('follows the recipient time zone across daylight saving', () => {
    expect(nextTick('0 9 * * *', 'Europe/Amsterdam', new Date('2026-03-28T12:00:00Z'))!.toISOString()).toBe('2026-03-29T07:00:00.000Z');
    expect(nextTick('0 9 * * *', 'Europe/Amsterdam', new Date('2026-03-27T12:00:00Z'))!.toISOString()).toBe('2026-03-28T08:00:00.000Z');
  });
});
