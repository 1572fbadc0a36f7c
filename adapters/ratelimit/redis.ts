import type { Redis } from 'ioredis';
import { createRedis } from '../redis.js';
import type { RateLimiter } from './port.js';

// One atomic step: refill by elapsed time (Redis clock), take a token if there is one.
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or cap
local at = tonumber(b[2]) or now
tokens = math.min(cap, tokens + (now - at) / 1000 * rate)
local allowed = 0
local wait = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 else wait = math.ceil((1 - tokens) / rate * 1000) end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(cap / rate * 1000) + 1000)
return {allowed, wait}`;

/** Buckets in Redis, shared by every ingress process. */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.redis = createRedis(url);
  }

  async take(key: string, capacity: number, perSecond: number) {
    const [allowed, wait] = (await this.redis.eval(TAKE, 1, `${this.prefix}:rl:${key}`, String(capacity), String(perSecond))) as [number, number];
    return { allowed: allowed === 1, retryAfterMs: wait };
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
