/** Token buckets: `capacity` tokens, refilled continuously at `perSecond`. */
export interface RateLimiter {
  /** Takes one token from the bucket `key`; when empty, says how long until one is back. */
  take(key: string, capacity: number, perSecond: number): Promise<{ allowed: boolean; retryAfterMs: number }>;
  close(): Promise<void>;
}
