import { Redis, type RedisOptions } from 'ioredis';

/**
 * Redis connections. BullMQ needs maxRetriesPerRequest: null on every connection
 * a worker uses; we use it everywhere so that a Redis restart makes commands wait
 * for the reconnect instead of failing mid-turn.
 */
export function createRedis(url: string, extra: RedisOptions = {}): Redis {
  const r = new Redis(url, {
    maxRetriesPerRequest: null,
    enableAutoPipelining: true,
    // Reconnect quickly, then back off to one attempt a second.
    retryStrategy: (times) => Math.min(50 * times, 1000),
    lazyConnect: false,
    ...extra,
  });
  // Errors surface through the commands that hit them; a lost connection alone must not crash.
  r.on('error', () => {});
  return r;
}
