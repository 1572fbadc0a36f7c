/**
 * A lease-based lock. A holder that dies loses the lock when its lease runs out;
 * a live holder keeps it by renewing.
 */
export interface Lease {
  readonly key: string;
  /** Extends the lease; false if it was lost (expired and taken). */
  renew(): Promise<boolean>;
  release(): Promise<void>;
}

export interface LockService {
  tryAcquire(key: string, ttlMs: number): Promise<Lease | null>;
  close(): Promise<void>;
}

/** Polls tryAcquire until it succeeds or waitMs passes. */
export async function acquire(locks: LockService, key: string, ttlMs: number, waitMs: number, signal?: AbortSignal): Promise<Lease | null> {
  const deadline = Date.now() + waitMs;
  for (let delay = 10; ; delay = Math.min(delay * 2, 250)) {
    const lease = await locks.tryAcquire(key, ttlMs);
    if (lease) return lease;
    if (Date.now() >= deadline || signal?.aborted) return null;
    await new Promise((r) => setTimeout(r, delay));
  }
}
