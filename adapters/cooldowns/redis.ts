import type { Redis } from 'ioredis';
import { createRedis } from '../redis.js';
import type { CooldownState, CooldownStore } from './port.js';

/**
 * Cooldowns in one Redis hash per slot, so every worker process sees a slot
 * that any of them found failing. Strikes are counted atomically (HINCRBY);
 * the hash expires a while after the cooldown so old strikes fade.
 */
export class RedisCooldowns implements CooldownStore {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.redis = createRedis(url);
  }

  private key(slot: string): string {
    return `${this.prefix}:cooldown:${slot}`;
  }

  async get(slots: string[]): Promise<Map<string, CooldownState>> {
    const p = this.redis.pipeline();
    for (const s of slots) p.hmget(this.key(s), 'until', 'strikes', 'reason');
    const res = (await p.exec()) ?? [];
    return new Map(
      slots.map((s, i) => {
        const [until, strikes, reason] = (res[i]?.[1] as (string | null)[] | undefined) ?? [];
        return [s, { until: Number(until ?? 0), strikes: Number(strikes ?? 0), ...(reason ? { reason } : {}) }];
      }),
    );
  }

  async fail(slot: string, ms: (strikes: number) => number, reason: string): Promise<CooldownState> {
    const key = this.key(slot);
    const strikes = await this.redis.hincrby(key, 'strikes', 1);
    const duration = ms(strikes);
    const until = Date.now() + duration;
    await this.redis.pipeline().hset(key, 'until', String(until), 'reason', reason).pexpire(key, duration + 15 * 60_000).exec();
    return { until, strikes, reason };
  }

  async clear(slot: string): Promise<void> {
    await this.redis.del(this.key(slot));
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
