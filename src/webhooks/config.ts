import { z } from 'zod';
import { EVENT_TYPES } from '../../kernel/jobs.js';

/** The event webhooks' slice of the configuration: `webhooks.*` (see src/webhooks/events.ts). */
export const webhooksSchema = z
  .object({
    /** Subscribers to outbound events (more can be added with `switchboard webhooks add`). */
    subscribers: z
      .array(
        z
          .object({
            id: z.string().regex(/^[a-zA-Z0-9_-]+$/),
            url: z.string().url(),
            secretEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
            /** Event types, or `*` for every one. */
            events: z.array(z.enum([...EVENT_TYPES, '*'])).min(1),
            /** Private address ranges this subscriber may be reached on (the SSRF guard refuses them otherwise). */
            allowCidrs: z.array(z.string()).default([]),
          })
          .strict(),
      )
      .default([]),
    /** Tries per event before it is dead-lettered. */
    maxAttempts: z.number().int().positive().default(6),
    backoffMs: z.number().int().positive().default(2_000),
  })
  .strict()
  .prefault({});

export type WebhooksConfig = z.infer<typeof webhooksSchema>;
