import type { Redis } from 'ioredis';
import { createRedis, failFast } from '../redis.js';
import type { HeartbeatStore, WorkerBeat } from './port.js';

/**
 * Heartbeats in Redis: one key per worker holding its beat, expiring after the TTL (Redis's
 * clock decides, so hosts whose clocks differ agree), and a set indexing the ids. A worker
 * whose key expired is dropped from the index by the next reader.
 */
export class RedisHeartbeats implements HeartbeatStore {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.redis = createRedis(url);
  }

  private get index(): string {
    return `${this.prefix}:workers`;
  }

  private key(id: string): string {
    return `${this.prefix}:worker:${id}`;
  }

  async beat(beat: WorkerBeat, ttlMs: number): Promise<void> {
    await this.redis.multi().set(this.key(beat.id), JSON.stringify(beat), 'PX', ttlMs).sadd(this.index, beat.id).exec();
  }

  /** Fails fast when Redis is away (a worker stopping during an outage must not wait for it): the beat expires by its TTL anyway. */
  async remove(id: string): Promise<void> {
    await failFast(this.redis, () => this.redis.multi().del(this.key(id)).srem(this.index, id).exec());
  }

  async alive(): Promise<WorkerBeat[]> {
    const ids = await this.redis.smembers(this.index);
    if (!ids.length) return [];
    const values = await this.redis.mget(ids.map((id) => this.key(id)));
    const gone = ids.filter((_, i) => values[i] === null);
    if (gone.length) await this.redis.srem(this.index, ...gone);
    return values.flatMap((v) => (v === null ? [] : [JSON.parse(v) as WorkerBeat]));
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
