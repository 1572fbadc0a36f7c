import type { Lease, LockService } from './port.js';

/** In-process locks for the embedded default (one process holds everything). */
export class MemoryLocks implements LockService {
  private readonly held = new Map<string, { token: symbol; until: number }>();

  async tryAcquire(key: string, ttlMs: number): Promise<Lease | null> {
    const cur = this.held.get(key);
    if (cur && cur.until > Date.now()) return null;
    const token = Symbol(key);
    this.held.set(key, { token, until: Date.now() + ttlMs });
    return {
      key,
      renew: async () => {
        const h = this.held.get(key);
        if (!h || h.token !== token) return false;
        h.until = Date.now() + ttlMs;
        return true;
      },
      release: async () => {
        if (this.held.get(key)?.token === token) this.held.delete(key);
      },
    };
  }

  async close(): Promise<void> {
    this.held.clear();
  }
}
