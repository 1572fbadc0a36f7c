import { MemoryRateLimiter } from './memory.js';
import type { TurnSlots } from './port.js';
import { RedisRateLimiter } from './redis.js';

/** Turn slots for a worker: in Redis when there is one (shared by every worker process), else in process. */
export function openTurnSlots(redisUrl: string | undefined, prefix: string): TurnSlots {
  return redisUrl ? new RedisRateLimiter(redisUrl, prefix) : new MemoryRateLimiter();
}
