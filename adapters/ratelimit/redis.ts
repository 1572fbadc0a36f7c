import type { Redis } from 'ioredis';
import { createRedis, failFast } from '../redis.js';
import type { RateLimiter, SlotScope, TurnSlots } from './port.js';

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

// Turn slots. Per scope: a sorted set of holders scored by expiry (Redis clock),
// and a sorted set of waiters scored by when they started waiting.
// KEYS: the n holder sets, then the n waiter sets. Waiters are forgotten after 10 min.
const SLOT_HEAD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS / 2
local function keep(k, ms) if redis.call('PTTL', k) < ms then redis.call('PEXPIRE', k, ms) end end
`;

// ARGV: holder, ttl, waiter ('' for none), cap of each scope. Returns 0, or the index of the full scope.
const ACQUIRE = `${SLOT_HEAD}
local holder, ttl, waiter = ARGV[1], tonumber(ARGV[2]), ARGV[3]
for i = 1, n do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  if not redis.call('ZSCORE', KEYS[i], holder) and redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[3 + i]) then
    if waiter ~= '' then
      redis.call('ZREMRANGEBYSCORE', KEYS[n + i], '-inf', now - 600000)
      redis.call('ZADD', KEYS[n + i], 'NX', now, waiter)
      keep(KEYS[n + i], 600000)
    end
    return i
  end
end
for i = 1, n do
  redis.call('ZADD', KEYS[i], now + ttl, holder)
  keep(KEYS[i], ttl + 1000)
  if waiter ~= '' then redis.call('ZREM', KEYS[n + i], waiter) end
end
return 0`;

// ARGV: holder, ttl.
const RENEW = `${SLOT_HEAD}
for i = 1, n do
  redis.call('ZADD', KEYS[i], now + tonumber(ARGV[2]), ARGV[1])
  keep(KEYS[i], tonumber(ARGV[2]) + 1000)
end
return 0`;

// ARGV: holder, cap of each scope. Returns the waiters to wake: the oldest, one per free slot.
const RELEASE = `${SLOT_HEAD}
local woken = {}
for i = 1, n do
  redis.call('ZREM', KEYS[i], ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  local free = tonumber(ARGV[1 + i]) - redis.call('ZCARD', KEYS[i])
  if free > 0 then
    local w = redis.call('ZRANGE', KEYS[n + i], 0, free - 1)
    for _, id in ipairs(w) do
      redis.call('ZREM', KEYS[n + i], id)
      woken[#woken + 1] = id
    end
  end
end
return woken`;

const COUNT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')`;

type SlotScript = (numKeys: number, ...args: string[]) => Promise<unknown>;

/** Buckets and turn slots in Redis, shared by every ingress and worker process. */
export class RedisRateLimiter implements RateLimiter, TurnSlots {
  private readonly redis: Redis;
  private readonly run: Record<'acquire' | 'renew' | 'release' | 'count', SlotScript>;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.redis = createRedis(url);
    // EVALSHA (loaded once per connection) instead of sending the script with every turn.
    const scripts = { acquire: ACQUIRE, renew: RENEW, release: RELEASE, count: COUNT };
    const cmds = this.redis as unknown as Record<string, SlotScript>;
    for (const [name, lua] of Object.entries(scripts)) this.redis.defineCommand(`sbSlots_${name}`, { lua });
    this.run = Object.fromEntries(
      Object.keys(scripts).map((name) => [name, (...a: Parameters<SlotScript>) => cmds[`sbSlots_${name}`]!.call(this.redis, ...a)]),
    ) as RedisRateLimiter['run'];
  }

  /** On the request's path (the API key's limit, the ingress's): Redis down is queue_unavailable at once, not a hung request. */
  async take(key: string, capacity: number, perSecond: number) {
    const [allowed, wait] = (await failFast(this.redis, () => this.redis.eval(TAKE, 1, `${this.prefix}:rl:${key}`, String(capacity), String(perSecond)))) as [
      number,
      number,
    ];
    return { allowed: allowed === 1, retryAfterMs: wait };
  }

  private keys(scopes: SlotScope[]): string[] {
    return [...scopes.map((s) => `${this.prefix}:slots:${s.key}`), ...scopes.map((s) => `${this.prefix}:slotwait:${s.key}`)];
  }

  async acquire(scopes: SlotScope[], holder: string, ttlMs: number, waiter?: string): Promise<{ acquired: true } | { acquired: false; full: string }> {
    if (!scopes.length) return { acquired: true };
    const r = (await this.run.acquire(
      scopes.length * 2,
      ...this.keys(scopes),
      holder,
      String(ttlMs),
      waiter ?? '',
      ...scopes.map((s) => String(s.cap)),
    )) as number;
    return r === 0 ? { acquired: true } : { acquired: false, full: scopes[r - 1]!.key };
  }

  async renew(scopes: SlotScope[], holder: string, ttlMs: number): Promise<void> {
    if (scopes.length) await this.run.renew(scopes.length * 2, ...this.keys(scopes), holder, String(ttlMs));
  }

  async release(scopes: SlotScope[], holder: string): Promise<string[]> {
    if (!scopes.length) return [];
    const woken = (await this.run.release(scopes.length * 2, ...this.keys(scopes), holder, ...scopes.map((s) => String(s.cap)))) as string[];
    return [...new Set(woken)];
  }

  async holders(key: string): Promise<number> {
    return (await this.run.count(1, `${this.prefix}:slots:${key}`)) as number;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
