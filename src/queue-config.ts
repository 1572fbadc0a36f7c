import { z } from 'zod';
import type { EnvBinding } from '../kernel/config-slice.js';

/** The job queue's slice of the configuration: `queue.*` (the drain, timer, event and delivery queues; see src/worker.ts). */
export const queueSchema = z
  .object({
    prefix: z.string().default('sb'),
    concurrency: z.number().int().positive().default(32),
    attempts: z.number().int().positive().default(8),
    backoffMs: z.number().int().positive().default(500),
    lockDurationMs: z.number().int().positive().default(30_000),
    stalledIntervalMs: z.number().int().positive().default(15_000),
    /** Inbox rows unconsumed for this long get their conversation re-drained. */
    recoverAfterMs: z.number().int().positive().default(30_000),
    recoverIntervalMs: z.number().int().positive().default(15_000),
    /** `start` on Redis: run the drains of messages accepted here in process while the worker has room (adapters/queue/local-lane.ts). */
    localLane: z.boolean().default(true),
    /**
     * A message that opens a one-off conversation, accepted while this process's worker has a free
     * slot (the local lane, or the embedded queue): its first turn is opened in the accept statement
     * and runs here at once (src/turn-opening.ts); off: accept, then the drain's own statement.
     */
    openOnAccept: z.boolean().default(true),
    /**
     * On Redis: drains enqueued in the same event-loop turn without a deduplication key (one-off
     * conversations) leave as one BullMQ job of at most this many (adapters/queue/coalescing.ts); 1: one job each.
     */
    coalesceMax: z.number().int().positive().default(16),
    /** A reply whose delivery failed after its turn closed: tries of the delivery job before its dead letter. */
    deliveryAttempts: z.number().int().positive().default(5),
    /** The delivery job's first retry delay; each later one doubles it. */
    deliveryBackoffMs: z.number().int().positive().default(5_000),
  })
  .strict()
  .prefault({});

export const QUEUE_ENV: EnvBinding[] = [
  { env: 'SWITCHBOARD_WORKER_CONCURRENCY', path: ['concurrency'], kind: 'int' },
  { env: 'SWITCHBOARD_QUEUE_PREFIX', path: ['prefix'], kind: 'string' },
  { env: 'SWITCHBOARD_LOCK_DURATION_MS', path: ['lockDurationMs'], kind: 'int' },
  { env: 'SWITCHBOARD_STALLED_INTERVAL_MS', path: ['stalledIntervalMs'], kind: 'int' },
  { env: 'SWITCHBOARD_DELIVERY_ATTEMPTS', path: ['deliveryAttempts'], kind: 'int' },
  { env: 'SWITCHBOARD_QUEUE_LOCAL_LANE', path: ['localLane'], kind: 'bool' },
  { env: 'SWITCHBOARD_QUEUE_OPEN_ON_ACCEPT', path: ['openOnAccept'], kind: 'bool' },
  { env: 'SWITCHBOARD_QUEUE_COALESCE_MAX', path: ['coalesceMax'], kind: 'int' },
];

export type QueueConfig = z.infer<typeof queueSchema>;
