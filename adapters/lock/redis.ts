import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createRedis } from '../redis.js';
import type { Lease, LockService } from './port.js';

// Compare-and-act scripts: only the holder's token may renew or release.
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

export class RedisLocks implements LockService {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.redis = createRedis(url);
  }

  async tryAcquire(key: string, ttlMs: number): Promise<Lease | null> {
    const k = `${this.prefix}:lock:${key}`;
    const token = randomUUID();
    const ok = await this.redis.set(k, token, 'PX', ttlMs, 'NX');
    if (ok !== 'OK') return null;
    return {
      key,
      renew: async () => (await this.redis.eval(RENEW, 1, k, token, String(ttlMs))) === 1,
      release: async () => {
        await this.redis.eval(RELEASE, 1, k, token);
      },
    };
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
