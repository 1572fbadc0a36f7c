import { z } from 'zod';
import type { EnvBinding } from '../kernel/config-slice.js';

/** The limits' slice of the configuration: `limits.*` (rate limits, concurrency caps, per-turn budgets; see src/limits.ts). */
export const limitsSchema = z
  .object({
    /** Messages per sender: a burst of `burst`, refilled at `perMinute`. 0 turns a limit off. */
    sender: z
      .object({ burst: z.number().int().nonnegative().default(20), perMinute: z.number().nonnegative().default(30) })
      .strict()
      .prefault({}),
    /** Messages per conversation. */
    conversation: z
      .object({ burst: z.number().int().nonnegative().default(30), perMinute: z.number().nonnegative().default(60) })
      .strict()
      .prefault({}),
    /** Apply the sender and conversation limits to the HTTP API too (per API key); chat channels always. */
    applyToHttp: z.boolean().default(false),
    /** Turns running at once across every worker (0: no cap beyond each worker's concurrency). */
    globalConcurrentTurns: z.number().int().nonnegative().default(0),
    /** Turns of one HTTP API key running at once across every worker, so one key cannot take every worker (0: no cap). */
    maxConcurrentTurnsPerKey: z.number().int().nonnegative().default(8),
    /** Turns of one chat sender (channel + sender id) running at once; on the HTTP API the sender is the key (0: no cap). */
    maxConcurrentTurnsPerSender: z.number().int().nonnegative().default(4),
    /**
     * Requests per API key to POST /v1/chat/completions: `perMinute`, with bursts of `burst` (default: a
     * minute's worth); over it, 429 with Retry-After. `off` (or 0) turns it off; a number is the per-minute rate.
     */
    apiKey: z
      .preprocess(
        (v) =>
          v === 'off' || v === false || v === 0 || v === '0'
            ? { perMinute: 0 }
            : typeof v === 'number' || (typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v))
              ? { perMinute: Number(v) }
              : v,
        z
          .object(
            { perMinute: z.number().nonnegative().default(60), burst: z.number().int().nonnegative().optional() },
            { error: 'expected off, a number of requests per minute, or { perMinute, burst }' },
          )
          .strict()
          .transform((l) => ({ perMinute: l.perMinute, burst: l.perMinute === 0 ? 0 : (l.burst ?? Math.max(1, Math.ceil(l.perMinute))) })),
      )
      .prefault({}),
    /** Per-turn budgets, checked before each model call (0: none). */
    turnTokens: z.number().int().nonnegative().default(0),
    turnCostUsd: z.number().nonnegative().default(0),
  })
  .strict()
  .prefault({});

export const LIMITS_ENV: EnvBinding[] = [
  { env: 'SWITCHBOARD_MAX_TURNS_PER_KEY', path: ['maxConcurrentTurnsPerKey'], kind: 'int' },
  { env: 'SWITCHBOARD_MAX_TURNS_PER_SENDER', path: ['maxConcurrentTurnsPerSender'], kind: 'int' },
  { env: 'SWITCHBOARD_HTTP_RATE_LIMIT', path: ['apiKey'], kind: 'string' },
];

export type LimitsConfig = z.infer<typeof limitsSchema>;
