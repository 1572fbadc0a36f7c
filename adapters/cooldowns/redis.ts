import type { Redis } from 'ioredis';
import { createRedis } from '../redis.js';
import type { CooldownState, CooldownStore } from './port.js';

/** How long a read of the cooldowns is reused in this process. */
const READ_CACHE_MS = 500;

/**
 * Cooldowns in one Redis hash per slot, so every worker process sees a slot
 * that any of them found failing. Strikes are counted atomically (HINCRBY);
 * the hash expires a while after the cooldown so old strikes fade.
 */
export class RedisCooldowns implements CooldownStore {
  private readonly redis: Redis;
  private generation = 0;
  private readonly cache = new Map<string, { at: number; states: Map<string, CooldownState> }>();

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
    // Every model call asks; the answer changes only when a slot fails. A
    // short-lived copy saves a round trip on nearly every turn, and this
    // process's own changes drop it at once (another worker's show within READ_CACHE_MS).
    const now = Date.now();
    const cacheKey = slots.join('\0');
    const hit = this.cache.get(cacheKey);
    if (hit && hit.at > now - READ_CACHE_MS) return new Map(hit.states);
    const generation = this.generation;
    const states = await this.read(slots);
    // A change made here while the read was in flight makes it stale.
    if (generation === this.generation) {
      if (this.cache.size > 100) this.cache.clear();
      this.cache.set(cacheKey, { at: now, states });
    }
    return new Map(states);
  }

  private async read(slots: string[]): Promise<Map<string, CooldownState>> {
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

  /** After a write: drops the copy, and keeps a read that was in flight from being cached. */
  private invalidate(): void {
    this.generation++;
    this.cache.clear();
  }

  async fail(slot: string, ms: (strikes: number) => number, reason: string): Promise<CooldownState> {
    const key = this.key(slot);
    const strikes = await this.redis.hincrby(key, 'strikes', 1);
    const duration = ms(strikes);
    const until = Date.now() + duration;
    await this.redis
      .pipeline()
      .hset(key, 'until', String(until), 'reason', reason)
      .pexpire(key, duration + 15 * 60_000)
      .exec();
    this.invalidate();
    return { until, strikes, reason };
  }

  async clear(slot: string): Promise<void> {
    await this.redis.del(this.key(slot));
    this.invalidate();
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
