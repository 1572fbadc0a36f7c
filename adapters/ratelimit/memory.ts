import type { RateLimiter, SlotScope, TurnSlots } from './port.js';

/** Waiters older than this are forgotten (their conversation's own retry registers it again). */
const WAITER_TTL_MS = 600_000;

/** In process: the embedded default (one process runs every turn). */
export class MemoryRateLimiter implements RateLimiter, TurnSlots {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  /** scope → holder → expiry (ms). */
  private readonly slots = new Map<string, Map<string, number>>();
  /** scope → waiter → since (ms); Map keeps insertion order, the oldest first. */
  private readonly waiters = new Map<string, Map<string, number>>();

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

  private live(key: string, now: number): Map<string, number> {
    let m = this.slots.get(key);
    if (!m) this.slots.set(key, (m = new Map()));
    for (const [h, until] of m) if (until <= now) m.delete(h);
    return m;
  }

  async acquire(scopes: SlotScope[], holder: string, ttlMs: number, waiter?: string): Promise<{ acquired: true } | { acquired: false; full: string }> {
    const now = Date.now();
    for (const s of scopes) {
      const m = this.live(s.key, now);
      if (!m.has(holder) && m.size >= s.cap) {
        if (waiter) {
          let w = this.waiters.get(s.key);
          if (!w) this.waiters.set(s.key, (w = new Map()));
          for (const [id, since] of w) if (since <= now - WAITER_TTL_MS) w.delete(id);
          if (!w.has(waiter)) w.set(waiter, now);
        }
        return { acquired: false, full: s.key };
      }
    }
    for (const s of scopes) {
      this.live(s.key, now).set(holder, now + ttlMs);
      if (waiter) this.waiters.get(s.key)?.delete(waiter);
    }
    return { acquired: true };
  }

  async renew(scopes: SlotScope[], holder: string, ttlMs: number): Promise<void> {
    const now = Date.now();
    for (const s of scopes) this.live(s.key, now).set(holder, now + ttlMs);
  }

  async release(scopes: SlotScope[], holder: string): Promise<string[]> {
    const now = Date.now();
    const woken = new Set<string>();
    for (const s of scopes) {
      const m = this.live(s.key, now);
      m.delete(holder);
      const w = this.waiters.get(s.key);
      let free = s.cap - m.size;
      if (w) {
        for (const id of w.keys()) {
          if (free-- <= 0) break;
          w.delete(id);
          woken.add(id);
        }
        if (w.size === 0) this.waiters.delete(s.key);
      }
      if (m.size === 0) this.slots.delete(s.key);
    }
    return [...woken];
  }

  async holders(key: string): Promise<number> {
    return this.slots.has(key) ? this.live(key, Date.now()).size : 0;
  }

  async close(): Promise<void> {}
}
