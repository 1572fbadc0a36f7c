import type { RateLimiter } from './port.js';

export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  async take(key: string, capacity: number, perSecond: number) {
    const now = Date.now();
    const b = this.buckets.get(key) ?? { tokens: capacity, at: now };
    b.tokens = Math.min(capacity, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      this.buckets.set(key, b);
      return { allowed: true, retryAfterMs: 0 };
    }
    this.buckets.set(key, b);
    return { allowed: false, retryAfterMs: Math.ceil(((1 - b.tokens) / perSecond) * 1000) };
  }

  async close(): Promise<void> {}
}
