/**
 * One contract suite for every port, run against both implementations:
 * embedded (in-process queue/bus/locks + PGlite) and Redis/BullMQ + Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bus } from '../adapters/bus/port.js';
import { MemoryBus } from '../adapters/bus/memory.js';
import { RedisStreamsBus } from '../adapters/bus/redis-streams.js';
import type { Db } from '../adapters/db/port.js';
import { openPostgres } from '../adapters/db/pg.js';
import { openPglite } from '../adapters/db/pglite.js';
import type { LockService } from '../adapters/lock/port.js';
import { MemoryLocks } from '../adapters/lock/memory.js';
import { RedisLocks } from '../adapters/lock/redis.js';
import { BullQueue } from '../adapters/queue/bullmq.js';
import { MemoryQueue } from '../adapters/queue/memory.js';
import type { JobQueue } from '../adapters/queue/port.js';
import { migrate } from '../adapters/store/migrate.js';
import { Store, type StartTurn } from '../adapters/store/store.js';
import type { InboundMessage } from '../src/envelope.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';
import { eventually } from './support/gateway.js';

interface Backend {
  name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  queue<T>(): JobQueue<T>;
  /** A subscriber-side and a publisher-side bus (two processes; one shared instance when embedded). */
  busPair(): [Bus, Bus];
  locks(): LockService;
  db(): Promise<Db>;
}

const settings = { attempts: 3, backoffMs: 50 };
let redis: TestRedis | undefined;
let pgdb: TestDatabase | undefined;
let n = 0;

const backends: Backend[] = [
  {
    name: 'embedded',
    async setup() {},
    async teardown() {},
    queue: () => new MemoryQueue(settings),
    busPair: () => {
      const b = new MemoryBus();
      return [b, b];
    },
    locks: () => new MemoryLocks(),
    db: () => openPglite(),
  },
  {
    name: 'redis+postgres',
    async setup() {
      redis = await TestRedis.start();
      pgdb = await createTestDatabase();
    },
    async teardown() {
      await redis?.stop();
      await pgdb?.drop();
    },
    queue: () => new BullQueue(`q${++n}`, redis!.url, { ...settings, prefix: 'ct', lockDurationMs: 5_000, stalledIntervalMs: 5_000 }),
    busPair: () => [new RedisStreamsBus(redis!.url, { prefix: 'ct' }), new RedisStreamsBus(redis!.url, { prefix: 'ct' })],
    locks: () => new RedisLocks(redis!.url, `ct${++n}`),
    db: () => openPostgres(pgdb!.url),
  },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(backends)('ports contract: $name', (backend) => {
  beforeAll(() => backend.setup());
  afterAll(() => backend.teardown());

  describe('queue', () => {
    it('runs each added job with its data', async () => {
      const q = backend.queue<{ v: number }>();
      const seen: number[] = [];
      q.process(async (job) => void seen.push(job.data.v), { concurrency: 2 });
      for (let i = 0; i < 5; i++) await q.add({ v: i });
      await eventually(async () => seen.length === 5);
      expect(seen.sort()).toEqual([0, 1, 2, 3, 4]);
      await q.close();
    });

    it('keeps one active and one waiting job per dedup key; adds while active run once, after it', async () => {
      const q = backend.queue<{ v: number }>();
      let active = 0;
      let maxActive = 0;
      const runs: number[] = [];
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      q.process(
        async (job) => {
          active++;
          maxActive = Math.max(maxActive, active);
          runs.push(job.data.v);
          if (job.data.v === 1) await gate;
          active--;
        },
        { concurrency: 4 },
      );
      await q.add({ v: 1 }, { dedupKey: 'conv-a' });
      await eventually(async () => runs.length === 1);
      await q.add({ v: 2 }, { dedupKey: 'conv-a' });
      await q.add({ v: 3 }, { dedupKey: 'conv-a' });
      await q.add({ v: 4 }, { dedupKey: 'conv-a' });
      await sleep(200);
      expect(runs).toEqual([1]); // nothing runs beside the active job of the same key
      release();
      await eventually(async () => runs.length === 2);
      await sleep(300);
      expect(runs).toEqual([1, 4]); // exactly one follow-up, carrying the latest data
      expect(maxActive).toBe(1);
      await q.close();
    });

    it('runs different dedup keys in parallel', async () => {
      const q = backend.queue<{ k: string }>();
      let active = 0;
      let maxActive = 0;
      q.process(
        async () => {
          active++;
          maxActive = Math.max(maxActive, active);
          await sleep(300);
          active--;
        },
        { concurrency: 4 },
      );
      await Promise.all(['a', 'b', 'c'].map((k) => q.add({ k }, { dedupKey: k })));
      await eventually(async () => maxActive === 3, 5_000);
      await q.close();
    });

    it('retries a job whose handler throws, with the attempt number', async () => {
      const q = backend.queue<{ v: number }>();
      const attempts: number[] = [];
      q.process(
        async (job) => {
          attempts.push(job.attempt);
          if (job.attempt < 2) throw new Error('transient');
        },
        { concurrency: 1 },
      );
      await q.add({ v: 1 }, { dedupKey: 'retry-me' });
      await eventually(async () => attempts.length === 2, 5_000);
      expect(attempts).toEqual([1, 2]);
      await q.close();
    });

    it('holds a delayed job back until its delay passes', async () => {
      const q = backend.queue<{ v: number }>();
      let ranAt = 0;
      q.process(async () => void (ranAt = Date.now()), { concurrency: 1 });
      const added = Date.now();
      await q.add({ v: 1 }, { delayMs: 400 });
      await eventually(async () => ranAt > 0, 5_000);
      expect(ranAt - added).toBeGreaterThanOrEqual(350);
      await q.close();
    });

    it('close() waits for running jobs to finish', async () => {
      const q = backend.queue<{ v: number }>();
      let finished = false;
      let started = false;
      q.process(
        async () => {
          started = true;
          await sleep(300);
          finished = true;
        },
        { concurrency: 1 },
      );
      await q.add({ v: 1 });
      await eventually(async () => started);
      await q.close();
      expect(finished).toBe(true);
    });
  });

  describe('bus', () => {
    it('delivers events published after subscribe, in order, only to that topic', async () => {
      const [bus, publisher] = backend.busPair();
      const got: unknown[] = [];
      const other: unknown[] = [];
      const s1 = await bus.subscribe('t1', (e) => got.push(e));
      const s2 = await bus.subscribe('t2', (e) => other.push(e));
      for (let i = 0; i < 40; i++) await publisher.publish('t1', { i });
      await publisher.publish('t1', { i: 40 }, { i: 41 }, ...Array.from({ length: 8 }, (_, k) => ({ i: 42 + k }))); // one write, many events
      await publisher.publish('t2', { x: 1 });
      await eventually(async () => got.length === 50 && other.length === 1);
      expect(got).toEqual(Array.from({ length: 50 }, (_, i) => ({ i })));
      expect(other).toEqual([{ x: 1 }]);
      s1.close();
      s2.close();
      await publisher.publish('t1', { i: 99 });
      await sleep(100);
      expect(got).toHaveLength(50);
      await bus.close();
      await publisher.close();
    });

    it('serves many topics at once, each subscriber its own events', async () => {
      const [bus, publisher] = backend.busPair();
      const got = new Map<string, unknown[]>();
      const subs = await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const topic = `many-${i}`;
          got.set(topic, []);
          return bus.subscribe(topic, (e) => got.get(topic)!.push(e));
        }),
      );
      await Promise.all(Array.from({ length: 30 }, (_, i) => publisher.publish(`many-${i}`, { i })));
      await eventually(async () => [...got.values()].every((v) => v.length === 1));
      for (const [topic, events] of got) expect(events).toEqual([{ i: Number(topic.split('-')[1]) }]);
      subs.forEach((s) => s.close());
      await bus.close();
      await publisher.close();
    });
  });

  describe('locks', () => {
    it('is exclusive until released or expired; renew extends; a lost lease cannot renew', async () => {
      const locks = backend.locks();
      const a = await locks.tryAcquire('k', 300);
      expect(a).not.toBeNull();
      expect(await locks.tryAcquire('k', 300)).toBeNull();
      await sleep(150);
      expect(await a!.renew()).toBe(true);
      await sleep(200);
      expect(await locks.tryAcquire('k', 300)).toBeNull(); // renewed: still held
      await a!.release();
      const b = await locks.tryAcquire('k', 200);
      expect(b).not.toBeNull();
      await sleep(300);
      const c = await locks.tryAcquire('k', 1000); // b expired
      expect(c).not.toBeNull();
      expect(await b!.renew()).toBe(false);
      await b!.release(); // must not release c's lock
      expect(await locks.tryAcquire('k', 1000)).toBeNull();
      await locks.close();
    });
  });

  describe('store', () => {
    let db: Db;
    let store: Store;
    const msg = (externalId: string, key = 'http/-/c1/-', text = 'hello'): InboundMessage => ({
      channel: 'http',
      externalId,
      conversationKey: key,
      sender: { id: 'u1' },
      text,
      attachments: [],
      receivedAt: new Date(),
    });

    beforeAll(async () => {
      db = await backend.db();
      await migrate(db);
      store = new Store(db);
    });
    afterAll(() => db.close());

    it('migrations are idempotent', async () => {
      const again = await migrate(db);
      expect(again.applied).toEqual([]);
      expect(again.current.length).toBeGreaterThan(0);
    });

    it('accepts a message once per (channel, external id)', async () => {
      const a = await store.accept(msg('dup-1'));
      const b = await store.accept(msg('dup-1', 'http/-/c1/-', 'redelivered'));
      expect(a.duplicate).toBe(false);
      expect(b).toEqual({ conversationId: a.conversationId, inboxId: a.inboxId, duplicate: true });
      const other = await store.accept({ ...msg('dup-1'), channel: 'sms' });
      expect(other.duplicate).toBe(false);
      const rows = await store.pending(a.conversationId);
      expect(rows.filter((r) => r.external_id === 'dup-1' && r.channel === 'http')).toHaveLength(1);
      expect(rows.find((r) => r.external_id === 'dup-1')!.text).toBe('hello');
    });

    const start = (conversationId: string, extra: Partial<StartTurn> = {}) =>
      store.startTurn({
        conversationId,
        worker: 'w1',
        lease: 'lease-1',
        leaseMs: 30_000,
        claim: 'auto',
        modes: { default: 'followup', byChannel: {} },
        historyLimits: { default: 50 },
        memoryLimit: 5,
        ...extra,
      });

    it('runs a turn: lease, claim, resume, finish once, transcript in order', async () => {
      const key = 'http/-/turns/-';
      const m1 = await store.accept(msg('t-1', key, 'first'));
      const m2 = await store.accept(msg('t-2', key, 'second'));
      const conv = m1.conversationId;
      const begun = await start(conv);
      expect(begun.conversation).toMatchObject({ id: conv, key, channel: 'http' });
      expect(begun.conversation!.created_at).toBeInstanceOf(Date);
      const turn = begun.turn!;
      expect(turn).toMatchObject({ seq: 1, status: 'running', attempt: 1, worker: 'w1' });
      expect(turn.started_at).toBeInstanceOf(Date);
      expect(begun.batch!.map((r) => [r.id, r.text, r.turn_id])).toEqual([[m1.inboxId, 'first', turn.id]]); // followup: the oldest only
      expect(begun.context!.history).toEqual([]);
      expect(begun.pending.map((r) => r.id)).toEqual([m1.inboxId, m2.inboxId]);
      expect(begun.pending[0]!.received_at).toBeInstanceOf(Date);
      // Another drain finds the lease taken: nothing is claimed or begun for it.
      const other = await start(conv, { lease: 'lease-2', worker: 'w2' });
      expect(other).toMatchObject({ conversation: null, hasWork: true });
      expect(other.turn).toBeUndefined();
      // The holder (after a crash: its retry with the same lease) resumes the claimed turn.
      const resumed = await start(conv, { worker: 'w2' });
      expect(resumed.turn).toMatchObject({ id: turn.id, attempt: 2, worker: 'w2' });
      expect(resumed.batch!.map((r) => r.id)).toEqual([m1.inboxId]);
      const messages = [
        { role: 'user', content: 'first', timestamp: 1 },
        { role: 'assistant', content: [{ type: 'text', text: 'reply one' }], timestamp: 2 },
      ];
      const closed = await store.finishTurn({ turnId: turn.id, status: 'done', messages, finishReason: 'stop', usage: { input: 1 }, lease: 'lease-1' });
      expect(closed.finished).toBe(true);
      expect(closed.pending.map((r) => r.text)).toEqual(['second']); // what is still waiting
      // A second close (a duplicate attempt) writes nothing.
      expect((await store.finishTurn({ turnId: turn.id, status: 'done', messages, finishReason: 'stop' })).finished).toBe(false);
      expect(await store.transcript(conv)).toEqual(messages);
      expect(await store.turnReply(turn.id)).toBe('reply one');
      expect((await store.pending(conv)).map((r) => r.text)).toEqual(['second']);
      // Something still waited, so the lease is still held.
      expect((await start(conv, { lease: 'lease-2' })).conversation).toBeNull();
      const t2 = await start(conv);
      expect(t2.turn!.seq).toBe(2);
      expect(t2.context!.history).toEqual(messages); // the next turn starts from the transcript
      // Closing the last waiting message gives the lease back.
      await store.finishTurn({ turnId: t2.turn!.id, status: 'done', messages: [], finishReason: 'stop', lease: 'lease-1' });
      expect(await start(conv, { lease: 'lease-2' })).toMatchObject({ conversation: null, hasWork: false }); // nothing waits: no lease taken
      await store.accept(msg('t-3', key, 'third'));
      const t3 = await start(conv, { lease: 'lease-2' });
      expect(t3.conversation).not.toBeNull();
      expect(t3.batch!.map((r) => r.text)).toEqual(['third']);
      // Released explicitly, the lease can be taken by another drain.
      await store.releaseLease(conv, 'lease-2');
      expect((await start(conv, { lease: 'lease-3' })).turn).toMatchObject({ id: t3.turn!.id, attempt: 2 });
      expect(await store.renewLease(conv, 'lease-3', 30_000)).toBe(true);
      expect(await store.renewLease(conv, 'lease-2', 30_000)).toBe(false);
    });

    it('takes an expired lease; claims by queue mode; holds back while a turn is parked', async () => {
      const key = 'http/-/modes/-';
      const a = await store.accept(msg('q-1', key, 'a'));
      await store.accept(msg('q-2', key, 'b'));
      const conv = a.conversationId;
      // A lease whose drain died is taken once it has expired.
      const dead = await start(conv, { lease: 'dead', leaseMs: 1, claim: 'none' });
      expect(dead.conversation).not.toBeNull();
      expect(dead.turn).toBeUndefined(); // none: lease and state only
      await sleep(20);
      // collect claims nothing until the drain has waited for a pause ...
      const collect = await start(conv, { modes: { default: 'followup', byChannel: { http: 'collect' } } });
      expect(collect.conversation).not.toBeNull();
      expect(collect.mode).toBe('collect');
      expect(collect.turn).toBeUndefined();
      // ... then answers everything waiting at once.
      const all = await start(conv, { claim: 'all' });
      expect(all.batch!.map((r) => r.text)).toEqual(['a', 'b']);
      await store.parkTurn(all.turn!.id, { parked: true });
      await store.releaseLease(conv, 'lease-1');
      await store.accept(msg('q-3', key, 'c'));
      // A parked turn holds the conversation: no lease, no work.
      expect(await start(conv)).toMatchObject({ conversation: null, hasWork: false });
      await store.unparkTurn(all.turn!.id);
      const back = await start(conv);
      expect(back.turn).toMatchObject({ id: all.turn!.id, attempt: 2 });
      expect(back.batch!.map((r) => r.text)).toEqual(['a', 'b']);
    });

    it('loads the newest transcript window, oldest first, and memory notes with the turn', async () => {
      const m = await store.accept(msg('win-1', 'http/-/window/-'));
      const t = (await start(m.conversationId)).turn!;
      const messages = Array.from({ length: 10 }, (_, i) => ({ role: 'user', content: `m${i}`, timestamp: i }));
      await store.finishTurn({ turnId: t.id, status: 'done', messages, finishReason: 'stop', lease: 'lease-1' });
      const win = await store.transcript(m.conversationId, 3);
      expect(win.map((x) => (x as unknown as { content: string }).content)).toEqual(['m7', 'm8', 'm9']);
      await store.db.query(`insert into memory (scope, scope_key, body) values ('global', '', 'g1'), ('sender', 'u1', 's1'), ('sender', 'u2', 'other'), ('conversation', $1, 'c1')`, [m.conversationId]);
      await store.accept(msg('win-2', 'http/-/window/-'));
      const t2 = await start(m.conversationId, { historyLimits: { default: 50, small: 3 } });
      expect(t2.context!.history).toHaveLength(10); // the conversation's agent is "default"
      await store.db.query(`update conversations set agent = 'small' where id = $1`, [m.conversationId]);
      const t2again = await start(m.conversationId, { historyLimits: { default: 50, small: 3 } }); // resumes, with the agent's window
      expect(t2again.turn!.id).toBe(t2.turn!.id);
      expect(t2again.context!.history.map((x) => (x as unknown as { content: string }).content)).toEqual(['m7', 'm8', 'm9']);
      expect(t2again.context!.memory).toEqual(['g1', 's1', 'c1']);
      // A one-off conversation's context comes with its message: no transcript.
      const oneOff = await store.accept({ ...msg('win-3', 'http/-/window-oneoff/-'), context: [{ role: 'user', text: 'earlier' }] });
      expect((await start(oneOff.conversationId)).context!.history).toEqual([]);
    });

    it("forgets only what the caller may write: its own sender notes and this conversation's, never a global note", async () => {
      const add = (scope: 'global' | 'conversation' | 'sender', key: string, body: string) => store.addMemory(scope, key, body);
      const global = await add('global', '', 'operator note');
      const mine = await add('sender', 'forget-u1', 'about u1');
      const theirs = await add('sender', 'forget-u2', 'about u2');
      const here = await add('conversation', 'forget-c1', 'in c1');
      const there = await add('conversation', 'forget-c2', 'in c2');
      // u1 in conversation c1: a global note, another sender's note, another conversation's note are not deleted.
      for (const id of [global, theirs, there, 99_999_999]) expect(await store.forgetMemory(id, 'forget-c1', 'forget-u1')).toBe(false);
      // A sender id that happens to equal a conversation id (or the reverse) reaches nothing of the other scope.
      expect(await store.forgetMemory(here, 'forget-cX', 'forget-c1')).toBe(false);
      expect(await store.forgetMemory(mine, 'forget-u1', 'forget-uX')).toBe(false);
      const left = (await store.listMemory()).map((n) => n.id);
      for (const id of [global, mine, theirs, here, there]) expect(left).toContain(id);
      // Its own note and this conversation's, once.
      expect(await store.forgetMemory(mine, 'forget-c1', 'forget-u1')).toBe(true);
      expect(await store.forgetMemory(here, 'forget-c1', 'forget-u1')).toBe(true);
      expect(await store.forgetMemory(mine, 'forget-c1', 'forget-u1')).toBe(false);
      // What remains is still visible where it belongs, and the operator's delete reaches global notes.
      expect((await store.searchMemory('forget-c2', 'forget-u2', '')).map((n) => n.id)).toEqual(expect.arrayContaining([global, theirs, there]));
      expect(await store.deleteMemory(global)).toBe(true);
      await store.deleteMemory(theirs);
      await store.deleteMemory(there);
    });

    it('finds conversations whose inbox rows waited too long', async () => {
      const m = await store.accept(msg('stuck-1', 'http/-/stuck/-'));
      await sleep(60);
      expect(await store.stuckConversations(50)).toContain(m.conversationId);
      expect(await store.stuckConversations(60_000)).not.toContain(m.conversationId);
    });
  });
});
