import type { RateLimiter, SlotScope } from '../adapters/ratelimit/port.js';
import { formatIdentity, type Identity } from '../kernel/identity.js';
import type { Config } from './config.js';

export type LimitVerdict = { allowed: true } | { allowed: false; retryAfterMs: number; scope: 'sender' | 'conversation' | 'key'; message: string };

/** Rate limits per sender, per conversation and per API key: token buckets (Redis, or in process when embedded). */
export class RateLimits {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly config: Config,
  ) {}

  /** One message of this sender (a whole identity: the same id on another channel has its own bucket) in this conversation. */
  async check(from: Identity, conversationKey: string): Promise<LimitVerdict> {
    const { sender, conversation } = this.config.limits;
    const buckets: Array<['sender' | 'conversation', string, { burst: number; perMinute: number }]> = [
      ['sender', `s:${formatIdentity(from)}`, sender],
      ['conversation', `c:${conversationKey}`, conversation],
    ];
    for (const [scope, key, l] of buckets) {
      if (!l.burst || !l.perMinute) continue;
      const r = await this.limiter.take(key, l.burst, l.perMinute / 60);
      if (!r.allowed) {
        const secs = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
        return {
          allowed: false,
          retryAfterMs: r.retryAfterMs,
          scope,
          message: `You are sending messages faster than I can answer them; please wait ${secs} s and try again.`,
        };
      }
    }
    return { allowed: true };
  }

  /** Requests of one API key (`limits.apiKey`); `keyId` is the key's hash id, never the key. */
  async checkApiKey(keyId: string): Promise<LimitVerdict> {
    const { burst, perMinute } = this.config.limits.apiKey;
    if (!burst || !perMinute) return { allowed: true };
    const r = await this.limiter.take(`k:${keyId}`, burst, perMinute / 60);
    if (r.allowed) return { allowed: true };
    const secs = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
    return {
      allowed: false,
      retryAfterMs: r.retryAfterMs,
      scope: 'key',
      message: `Rate limit reached for this API key: ${perMinute} requests per minute (bursts of ${burst}). Please try again in ${secs} s.`,
    };
  }
}

/**
 * The concurrency caps a turn counts against (`limits.maxConcurrentTurnsPerKey`
 * and `limits.maxConcurrentTurnsPerSender`): its conversation's API key (the
 * owner, a hash id) and the sender of the first message it answers, a whole
 * identity (`sender:slack:T1:U1`). On the HTTP API the sender is the key
 * itself, so only the key's cap applies there.
 */
export function turnScopes(config: Config, conversation: { channel: string; owner: string | null }, sender: Identity | undefined): SlotScope[] {
  const { maxConcurrentTurnsPerKey: perKey, maxConcurrentTurnsPerSender: perSender } = config.limits;
  const scopes: SlotScope[] = [];
  if (perKey > 0 && conversation.owner) scopes.push({ key: `key:${conversation.owner}`, cap: perKey });
  const isKey = sender?.channel === 'http' && sender.id === conversation.owner;
  if (perSender > 0 && sender !== undefined && !isKey) scopes.push({ key: `sender:${formatIdentity(sender)}`, cap: perSender });
  return scopes;
}
