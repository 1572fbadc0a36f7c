/**
 * The Redis Streams bus on a private redis-server: a publish of several events is one XADD (what
 * Redis counts in INFO commandstats), and subscribers and history() read them back in order.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsBus } from '../adapters/bus/redis-streams.js';
import { eventually } from './support/gateway.js';
import { TestRedis } from './support/redis.js';

let redis: TestRedis;
let probe: Redis;

beforeAll(async () => {
  redis = await TestRedis.start();
  probe = new Redis(redis.url);
});

afterAll(async () => {
  probe.disconnect();
  await redis.stop();
});

async function calls(): Promise<Map<string, number>> {
  const stats = await probe.info('commandstats');
  return new Map([...stats.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
}

describe('Redis Streams bus', () => {
  it('writes one XADD per publish however many events it carries; the expiry rides along once per topic', async () => {
    const publisher = new RedisStreamsBus(redis.url, { prefix: 'rb' });
    const before = await calls();
    await publisher.publish('batch', { i: 0 }, { i: 1 }, { i: 2 });
    await publisher.publish('batch', { i: 3 });
    await publisher.publish('batch', { i: 4 }, { i: 5 });
    const after = await calls();
    const delta = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    expect(delta('xadd')).toBe(3);
    expect(delta('expire')).toBe(1);
    expect(delta('xtrim')).toBe(0);
    expect(await probe.xlen('rb:bus:batch')).toBe(3);
    expect(await probe.ttl('rb:bus:batch')).toBeGreaterThan(3000);
    await publisher.close();
  });

  it('hands a subscriber every event of a batched publish in order, and history() reads them back, the newest `limit`', async () => {
    const subscriber = new RedisStreamsBus(redis.url, { prefix: 'rb' });
    const publisher = new RedisStreamsBus(redis.url, { prefix: 'rb' });
    const got: unknown[] = [];
    const sub = await subscriber.subscribe('order', (e) => got.push(e));
    await publisher.publish('order', { i: 0 });
    await publisher.publish('order', { i: 1 }, { i: 2 }, { i: 3 });
    await publisher.publish('order', { i: 4 });
    await eventually(async () => got.length === 5);
    expect(got).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
    expect(await publisher.history('order')).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
    // A limit counts events, not entries: the last two of the batch and the one after it.
    expect(await publisher.history('order', 3)).toEqual([2, 3, 4].map((i) => ({ i })));
    sub.close();
    await subscriber.close();
    await publisher.close();
  });

  it('skips an entry that is not one of its events (another writer on the stream) and goes on', async () => {
    const subscriber = new RedisStreamsBus(redis.url, { prefix: 'rb' });
    const publisher = new RedisStreamsBus(redis.url, { prefix: 'rb' });
    const got: unknown[] = [];
    const sub = await subscriber.subscribe('foreign', (e) => got.push(e));
    await probe.xadd('rb:bus:foreign', '*', 'b', '{"not":"an array"}');
    await probe.xadd('rb:bus:foreign', '*', 'e', 'not json');
    await publisher.publish('foreign', { ok: 1 }, { ok: 2 });
    await eventually(async () => got.length === 2);
    expect(got).toEqual([{ ok: 1 }, { ok: 2 }]);
    expect(await publisher.history('foreign')).toEqual([{ ok: 1 }, { ok: 2 }]);
    sub.close();
    await subscriber.close();
    await publisher.close();
  });

  it('with wakeAfterMs, a topic closed sooner costs Redis no command, and one kept open still gets every event', async () => {
    const subscriber = new RedisStreamsBus(redis.url, { prefix: 'rb', wakeAfterMs: 200 });
    const publisher = new RedisStreamsBus(redis.url, { prefix: 'rb' });
    // The reader blocks on a long-lived topic first (as a worker's control topic does).
    const control = await subscriber.subscribe('control', () => {});
    await eventually(async () => ((await calls()).get('xread') ?? 0) > 0);
    await new Promise((r) => setTimeout(r, 300));
    const before = await calls();
    for (let i = 0; i < 5; i++) (await subscriber.subscribe(`short-${i}`, () => {})).close();
    await new Promise((r) => setTimeout(r, 400));
    const after = await calls();
    expect((after.get('client|unblock') ?? 0) - (before.get('client|unblock') ?? 0)).toBe(0);
    expect((after.get('xread') ?? 0) - (before.get('xread') ?? 0)).toBe(0);

    const got: unknown[] = [];
    const sub = await subscriber.subscribe('kept', (e) => got.push(e));
    await publisher.publish('kept', { n: 1 }); // before the reader reads the topic: not lost
    await eventually(async () => got.length === 1);
    await publisher.publish('kept', { n: 2 }, { n: 3 });
    await eventually(async () => got.length === 3);
    expect(got).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    sub.close();
    control.close();
    await subscriber.close();
    await publisher.close();
  });
});
