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
});
