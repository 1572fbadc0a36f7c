import type { RateLimiter } from '../adapters/ratelimit/port.js';
import type { Config } from './config.js';

export type LimitVerdict = { allowed: true } | { allowed: false; retryAfterMs: number; scope: 'sender' | 'conversation'; message: string };

/** Rate limits per sender and per conversation: token buckets (Redis, or in process when embedded). */
export class RateLimits {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly config: Config,
  ) {}

  async check(channel: string, senderId: string, conversationKey: string): Promise<LimitVerdict> {
    const { sender, conversation } = this.config.limits;
    const buckets: Array<['sender' | 'conversation', string, { burst: number; perMinute: number }]> = [
      ['sender', `s:${channel}:${senderId}`, sender],
      ['conversation', `c:${conversationKey}`, conversation],
    ];
    for (const [scope, key, l] of buckets) {
      if (!l.burst || !l.perMinute) continue;
      const r = await this.limiter.take(key, l.burst, l.perMinute / 60);
      if (!r.allowed) {
        const secs = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
        return { allowed: false, retryAfterMs: r.retryAfterMs, scope, message: `You are sending messages faster than I can answer them; please wait ${secs} s and try again.` };
      }
    }
    return { allowed: true };
  }
}
