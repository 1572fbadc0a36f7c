/**
 * The drain queue of a process running both roles on Redis (adapters/queue/local-lane.ts): a job
 * runs in process while the worker has room, and goes through BullMQ otherwise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullQueue } from '../adapters/queue/bullmq.js';
import { LocalLaneQueue } from '../adapters/queue/local-lane.js';
import { MemoryQueue } from '../adapters/queue/memory.js';
import { eventually } from './support/gateway.js';
import { bullJobCount, TestRedis } from './support/redis.js';

let redis: TestRedis;
let n = 0;
const settings = { attempts: 3, backoffMs: 50, prefix: 'll', lockDurationMs: 5_000, stalledIntervalMs: 5_000 };

beforeAll(async () => {
  redis = await TestRedis.start();
}, 30_000);

afterAll(async () => {
  await redis?.stop();
});

const waitFor = (check: () => boolean | Promise<boolean>) => eventually(async () => check(), 15_000, 20);

function lane(): { name: string; q: LocalLaneQueue<{ id: string }>; shared: BullQueue<{ id: string }> } {
  const name = `drain${++n}`;
  const shared = new BullQueue<{ id: string }>(name, redis.url, settings);
  return { name, shared, q: new LocalLaneQueue(shared, new MemoryQueue({ attempts: 3, backoffMs: 50 })) };
}

const bullJobs = (name: string) => bullJobCount(redis.url, settings.prefix, name);

describe('LocalLaneQueue', () => {
  it('runs a job in process while the worker has room, without BullMQ', async () => {
    const { name, q } = lane();
    const done: string[] = [];
    q.process(async (job) => void done.push(job.data.id), { concurrency: 4 });
    await q.add({ id: 'a' }, { dedupKey: 'a' });
    await q.add({ id: 'b' });
    await waitFor(() => done.length === 2);
    expect(done.sort()).toEqual(['a', 'b']);
    expect(await bullJobs(name)).toBe(0);
    await q.close();
  });

  it('sends a job to BullMQ when the worker is full, or when it is delayed, and still runs it here', async () => {
    const { name, q } = lane();
    const done: string[] = [];
    const started: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    q.process(
      async (job) => {
        started.push(job.data.id);
        if (job.data.id === 'slow') await gate;
        done.push(job.data.id);
      },
      { concurrency: 1 },
    );
    await q.add({ id: 'slow' });
    await waitFor(() => started.includes('slow'));
    await q.add({ id: 'overflow' });
    await q.add({ id: 'later' }, { delayMs: 100 });
    expect(await bullJobs(name)).toBe(2);
    release();
    await waitFor(() => done.length === 3);
    expect(done.sort()).toEqual(['later', 'overflow', 'slow']);
    await q.close();
  });

  it('retries a failing job in process', async () => {
    const { q } = lane();
    let tries = 0;
    q.process(
      async () => {
        if (++tries < 2) throw new Error('transient');
      },
      { concurrency: 2 },
    );
    await q.add({ id: 'x' }, { dedupKey: 'x' });
    await waitFor(() => tries === 2);
    await q.close();
  });

  it('hands a job still waiting here to BullMQ when it closes', async () => {
    const { name, q } = lane();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const seen: string[] = [];
    q.process(
      async (job) => {
        seen.push(job.data.id);
        await gate;
      },
      { concurrency: 2 },
    );
    await q.add({ id: 'first' }, { dedupKey: 'conv' });
    await waitFor(() => seen.length === 1);
    // Same conversation while its drain runs: it waits here, behind it.
    await q.add({ id: 'second' }, { dedupKey: 'conv' });
    expect(await bullJobs(name)).toBe(0);
    const closing = q.close();
    release();
    await closing;
    // The waiting drain is now BullMQ's, for any worker. A fetch this process's own BullMQ worker
    // had in flight when it stopped taking jobs may still have taken it before close() ended
    // (BullMQ's pause does not cancel a blocking fetch): either way it ran exactly once.
    const other = new BullQueue<{ id: string }>(name, redis.url, settings);
    const got: string[] = [];
    other.process(async (job) => void got.push(job.data.id), { concurrency: 1 });
    await waitFor(() => [...seen, ...got].includes('second'));
    await waitFor(async () => {
      const c = await other.counts();
      return c.waiting + c.active + c.delayed === 0;
    });
    expect([...seen, ...got].sort()).toEqual(['first', 'second']);
    await other.close();
  });

  it('reserves a slot for a job about to be added: it counts against the room here until it runs, and its run hands over what it was given once', async () => {
    const { name, q } = lane();
    const seen: Array<[string, number, unknown]> = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let fail = true;
    q.process(
      async (job) => {
        seen.push([job.data.id, job.attempt, job.local]);
        if (job.data.id === 'opened' && fail) {
          fail = false;
          throw new Error('transient');
        }
        if (job.data.id === 'hold') await gate;
      },
      { concurrency: 2 },
    );
    await q.add({ id: 'hold' });
    await waitFor(() => seen.length === 1);
    const slot = q.reserveLocal()!;
    expect(slot).toBeDefined();
    // One running and one reserved: the process is full, for reservations and for adds.
    expect(q.reserveLocal()).toBeUndefined();
    await q.add({ id: 'overflow' });
    expect(await bullJobs(name)).toBe(1);
    expect(slot.run({ id: 'opened' }, { turn: 't1' })).toBe(true);
    // Its first run gets what was handed over; its retry, from the queue, does not.
    await waitFor(() => seen.filter(([id]) => id === 'opened').length === 2);
    expect(seen.filter(([id]) => id === 'opened')).toEqual([
      ['opened', 1, { turn: 't1' }],
      ['opened', 2, undefined],
    ]);
    expect(() => slot.run({ id: 'twice' }, {})).toThrow(/one job/);
    release();
    await waitFor(() => seen.some(([id]) => id === 'overflow'));
    await q.close();
  });

  it('a released slot is room again; a slot whose queue closed meanwhile runs nothing and says so', async () => {
    const { q } = lane();
    const seen: string[] = [];
    q.process(async (job) => void seen.push(job.data.id), { concurrency: 1 });
    const a = q.reserveLocal()!;
    expect(q.reserveLocal()).toBeUndefined();
    a.release();
    const b = q.reserveLocal()!;
    expect(b).toBeDefined();
    await q.close();
    expect(q.reserveLocal()).toBeUndefined();
    expect(b.run({ id: 'late' }, {})).toBe(false);
    expect(seen).toEqual([]);
  });
});

describe('MemoryQueue.reserveLocal (the embedded queue)', () => {
  it('holds a slot against waiting jobs until it runs or is released', async () => {
    const q = new MemoryQueue<{ id: string }>({ attempts: 2, backoffMs: 10 });
    // No worker in this process: nothing to reserve.
    expect(q.reserveLocal()).toBeUndefined();
    const seen: string[] = [];
    q.process(async (job) => void seen.push(job.data.id), { concurrency: 1 });
    const slot = q.reserveLocal()!;
    await q.add({ id: 'queued' });
    await new Promise((r) => setTimeout(r, 30));
    // The reserved slot keeps the queued job waiting: the reserved one starts first.
    expect(seen).toEqual([]);
    expect(slot.run({ id: 'reserved' }, 'handed')).toBe(true);
    await waitFor(() => seen.length === 2);
    expect(seen).toEqual(['reserved', 'queued']);
    const again = q.reserveLocal()!;
    again.release();
    again.release(); // a second release gives back nothing more: still one slot, not two
    expect(q.reserveLocal()).toBeDefined();
    expect(q.reserveLocal()).toBeUndefined();
    await q.close();
  });
});
