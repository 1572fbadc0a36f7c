/**
 * The bus of a process running both roles on Redis (adapters/bus/local-first.ts): turn events
 * for a subscriber in the same process stay in process; everything else still crosses Redis.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalFirstBus } from '../adapters/bus/local-first.js';
import { RedisStreamsBus } from '../adapters/bus/redis-streams.js';
import { isConversationTopic } from '../src/event-publisher.js';
import { TestRedis } from './support/redis.js';

let redis: TestRedis;
let probe: Redis;
let n = 0;

beforeAll(async () => {
  redis = await TestRedis.start();
  probe = new Redis(redis.url);
}, 30_000);

afterAll(async () => {
  probe?.disconnect();
  await redis?.stop();
});

async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function open(): { prefix: string; here: LocalFirstBus; other: RedisStreamsBus } {
  const prefix = `lf${++n}`;
  return {
    prefix,
    here: new LocalFirstBus(new RedisStreamsBus(redis.url, { prefix }), isConversationTopic),
    other: new RedisStreamsBus(redis.url, { prefix }),
  };
}

describe('LocalFirstBus', () => {
  it('hands a turn event to a subscriber in the same process without writing it to Redis, as a copy', async () => {
    const { prefix, here, other } = open();
    const got: unknown[] = [];
    const sub = await here.subscribe('conv:a', (e) => got.push(e));
    const event = { type: 'text_delta', delta: 'hi' };
    await here.publish('conv:a', event);
    expect(got).toEqual([event]);
    expect(got[0]).not.toBe(event);
    expect(await probe.exists(`${prefix}:bus:conv:a`)).toBe(0);
    // A follower that joins late reads it back from this process.
    expect(await here.history('conv:a')).toEqual([event]);
    sub.close();
    await here.close();
    await other.close();
  });

  it('still reaches a subscriber in another process when none is here', async () => {
    const { here, other } = open();
    const got: unknown[] = [];
    await other.subscribe('conv:b', (e) => got.push(e));
    await here.publish('conv:b', { n: 1 });
    await waitFor(() => got.length === 1);
    expect(got).toEqual([{ n: 1 }]);
    await here.close();
    await other.close();
  });

  it('delivers events published by another process to a subscriber here', async () => {
    const { here, other } = open();
    const got: unknown[] = [];
    await here.subscribe('conv:c', (e) => got.push(e));
    await other.publish('conv:c', { from: 'another worker' });
    await waitFor(() => got.length === 1);
    expect(got).toEqual([{ from: 'another worker' }]);
    await here.close();
    await other.close();
  });

  it('sends the control topic through Redis even with a subscriber here, and that subscriber sees it once', async () => {
    const { prefix, here, other } = open();
    const mine: unknown[] = [];
    const theirs: unknown[] = [];
    await here.subscribe('ctl', (e) => mine.push(e));
    await other.subscribe('ctl', (e) => theirs.push(e));
    await here.publish('ctl', { type: 'stop', conversationKey: 'k' });
    await waitFor(() => mine.length === 1 && theirs.length === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(mine).toHaveLength(1);
    expect(await probe.xlen(`${prefix}:bus:ctl`)).toBe(1);
    await here.close();
    await other.close();
  });

  it('goes back to Redis for a topic once its last subscriber here closed', async () => {
    const { prefix, here, other } = open();
    const a = await here.subscribe('conv:d', () => {});
    const b = await here.subscribe('conv:d', () => {});
    a.close();
    a.close(); // closing twice counts once
    await here.publish('conv:d', { n: 1 });
    expect(await probe.exists(`${prefix}:bus:conv:d`)).toBe(0);
    b.close();
    await here.publish('conv:d', { n: 2 });
    expect(await probe.xlen(`${prefix}:bus:conv:d`)).toBe(1);
    await here.close();
    await other.close();
  });
});
