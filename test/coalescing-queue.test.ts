/**
 * Drains enqueued together leave as one BullMQ job and run as their own jobs again
 * (adapters/queue/coalescing.ts), on a real Redis with BullMQ.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullQueue } from '../adapters/queue/bullmq.js';
import { type Carrier, COALESCED, CoalescingQueue } from '../adapters/queue/coalescing.js';
import { SwitchboardError } from '../kernel/errors.js';
import { eventually } from './support/gateway.js';
import { bullJobCount, TestRedis } from './support/redis.js';

type Job = { id: string };
let redis: TestRedis;
let n = 0;
const settings = { attempts: 4, backoffMs: 50, prefix: 'cq', lockDurationMs: 5_000, stalledIntervalMs: 5_000 };
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  redis = await TestRedis.start();
}, 30_000);

afterAll(async () => {
  for (const q of open) await q.close();
  await redis?.stop();
});

const waitFor = (check: () => boolean | Promise<boolean>) => eventually(async () => check(), 15_000, 20);

function queues(max = 16): { name: string; q: CoalescingQueue<Job>; bull: BullQueue<Carrier<Job>> } {
  const name = `drain${++n}`;
  const bull = new BullQueue<Carrier<Job>>(name, redis.url, settings);
  const q = new CoalescingQueue(bull, { max, retryDelayMs: 50 });
  open.push(q);
  return { name, q, bull };
}

const bullJobs = (name: string) => bullJobCount(redis.url, settings.prefix, name);

/** A failure that retrying repeats (the queue's retry policy fails it at once). */
class BadJobError extends SwitchboardError {
  readonly code = 'bad_job';
}

const ids = (k: number, p = 'j') => Array.from({ length: k }, (_, i) => `${p}${i}`);

describe('CoalescingQueue', () => {
  it('sends the adds of one event-loop turn as one BullMQ job and runs each of them once', async () => {
    const { name, q } = queues();
    const done: string[] = [];
    q.process(async (job) => void done.push(job.data.id), { concurrency: 8 });
    await Promise.all(ids(10).map((id) => q.add({ id })));
    expect(await bullJobs(name)).toBe(1);
    await waitFor(() => done.length >= 10);
    await new Promise((r) => setTimeout(r, 100));
    expect(done.sort()).toEqual(ids(10).sort());
  });

  it('takes at most `max` per job, and a lone add leaves without waiting for company', async () => {
    const { name, q } = queues(4);
    const done: string[] = [];
    q.process(async (job) => void done.push(job.data.id), { concurrency: 8 });
    await Promise.all(ids(10).map((id) => q.add({ id })));
    expect(await bullJobs(name)).toBe(3); // 4 + 4 + 2
    await q.add({ id: 'alone' });
    expect(await bullJobs(name)).toBe(4);
    await waitFor(() => done.length >= 11);
    expect(done.sort()).toEqual([...ids(10), 'alone'].sort());
  });

  it('keeps a job of its own for an add with a deduplication key or a delay', async () => {
    const { name, q } = queues();
    const done: string[] = [];
    q.process(async (job) => void done.push(job.data.id), { concurrency: 8 });
    await Promise.all([q.add({ id: 'a' }, { dedupKey: 'a' }), q.add({ id: 'b' }, { dedupKey: 'b' }), q.add({ id: 'c' }, { delayMs: 50 }), q.add({ id: 'd' })]);
    expect(await bullJobs(name)).toBe(4);
    await waitFor(() => done.length >= 4);
    expect(done.sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('runs at most `concurrency` of the carried jobs at once, across carriers', async () => {
    const { q } = queues(4);
    let running = 0;
    let most = 0;
    let finished = 0;
    q.process(
      async () => {
        most = Math.max(most, ++running);
        await new Promise((r) => setTimeout(r, 30));
        running--;
        finished++;
      },
      { concurrency: 3 },
    );
    await Promise.all(ids(16).map((id) => q.add({ id })));
    await waitFor(() => finished >= 16);
    expect(most).toBe(3);
  });

  it('runs a carried job that failed again as a job of its own, with its own retries and dead letter; the others ran once', async () => {
    const { name, q } = queues();
    const runs = new Map<string, number>();
    q.process(
      async (job) => {
        const k = (runs.get(job.data.id) ?? 0) + 1;
        runs.set(job.data.id, k);
        if (job.data.id === 'bad') throw new BadJobError('this job cannot succeed');
        if (job.data.id === 'flaky' && k < 3) throw new Error('not yet');
      },
      { concurrency: 8 },
    );
    await Promise.all(['x', 'flaky', 'bad', 'y'].map((id) => q.add({ id })));
    await waitFor(async () => (runs.get('flaky') ?? 0) >= 3 && (await q.counts()).failed === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(Object.fromEntries(runs)).toEqual({ x: 1, y: 1, flaky: 3, bad: 2 });
    // The carrier, then 'flaky' and 'bad' alone: 'flaky' retried as its own job, 'bad' failed at once there.
    expect(await bullJobs(name)).toBe(3);
    expect((await q.counts()).failed).toBe(1);
  });

  it('takes that many fewer jobs while a carrier runs: a backlog goes to a worker with room', async () => {
    const { name, q } = queues(4);
    const byA: string[] = [];
    const byB: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Worker A: 2 at once. Its first carrier (4 jobs) holds 2 more than it runs, so it takes no second job.
    q.process(
      async (job) => {
        byA.push(job.data.id);
        await gate;
      },
      { concurrency: 2 },
    );
    await Promise.all(ids(4, 'a').map((id) => q.add({ id })));
    await waitFor(() => byA.length === 2);
    await Promise.all(ids(4, 'b').map((id) => q.add({ id })));
    // Worker B (another process), started once the second carrier waits.
    const b = new CoalescingQueue(new BullQueue<Carrier<Job>>(name, redis.url, settings), { max: 4, retryDelayMs: 50 });
    open.push(b);
    b.process(async (job) => void byB.push(job.data.id), { concurrency: 4 });
    await waitFor(() => byB.length === 4);
    expect(byB.sort()).toEqual(ids(4, 'b').sort());
    release();
    await waitFor(() => byA.length === 4);
    expect(byA.sort()).toEqual(ids(4, 'a').sort());
  });

  it('splits a carrier in a process that does not coalesce: its other jobs leave as jobs of their own', async () => {
    const { name, q } = queues();
    await Promise.all(ids(3).map((id) => q.add({ id })));
    expect(await bullJobs(name)).toBe(1);
    const capped = new CoalescingQueue(new BullQueue<Carrier<Job>>(name, redis.url, settings), { max: 1, retryDelayMs: 50 });
    open.push(capped);
    const done: string[] = [];
    capped.process(async (job) => void done.push(job.data.id), { concurrency: 4 });
    await waitFor(() => done.length >= 3);
    expect(done.sort()).toEqual(ids(3).sort());
    expect(await bullJobs(name)).toBe(3);
  });

  it('sends what waits to be coalesced when it closes, and a worker of another process runs it', async () => {
    const { name, q } = queues();
    const added = Promise.all(ids(5).map((id) => q.add({ id })));
    await q.close();
    await added;
    expect(await bullJobs(name)).toBe(1);
    const other = new CoalescingQueue(new BullQueue<Carrier<Job>>(name, redis.url, settings), { max: 16, retryDelayMs: 50 });
    open.push(other);
    const done: string[] = [];
    other.process(async (job) => void done.push(job.data.id), { concurrency: 2 });
    await waitFor(() => done.length >= 5);
    expect(done.sort()).toEqual(ids(5).sort());
  });

  it('closes within its grace while Redis is away, its unsent adds failing rather than hanging', async () => {
    const gone = await TestRedis.start();
    const q = new CoalescingQueue(new BullQueue<Carrier<Job>>('drain', gone.url, settings), { max: 16, retryDelayMs: 50 });
    q.process(async () => {}, { concurrency: 2 });
    await q.add({ id: 'before' });
    await gone.stop();
    const added = Promise.allSettled(ids(3).map((id) => q.add({ id })));
    const t0 = Date.now();
    await q.close();
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect((await added).map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
  }, 30_000);

  it('leaves a worker from before it the first job of a carrier, the fields it knows', async () => {
    const { name, q } = queues();
    await Promise.all(ids(3).map((id) => q.add({ id })));
    const plain = new BullQueue<Record<string, unknown>>(name, redis.url, settings);
    open.push(plain);
    const seen: Array<Record<string, unknown>> = [];
    plain.process(async (job) => void seen.push(job.data), { concurrency: 1 });
    await waitFor(() => seen.length >= 1);
    expect(seen[0]!.id).toBe('j0');
    expect(seen[0]![COALESCED]).toEqual([{ id: 'j1' }, { id: 'j2' }]);
  });
});
