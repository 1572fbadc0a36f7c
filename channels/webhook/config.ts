import { z } from 'zod';

export const hookSchema = z
  .object({
    name: z.string().regex(/^[a-zA-Z0-9_-]+$/),
    /** Environment variable holding this webhook's signing secret. */
    secretEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
    /** Where replies are POSTed (signed the same way). */
    callbackUrl: z.string().url().optional(),
    /** Take the callback URL from the request's `callbackUrl` field (off: never from the request). */
    allowRequestCallback: z.boolean().default(false),
    /** Address ranges the callback may reach although private (e.g. an internal service). */
    allowCallbackCidrs: z.array(z.string()).default([]),
    agent: z.string().default('default'),
  })
  .strict();

export const webhookChannelSchema = z
  .object({
    hooks: z.array(hookSchema).default([]),
    /** Seconds a signature timestamp may differ from now. */
    replayWindowSeconds: z.number().int().positive().default(300),
    /** Callback delivery: tries and backoff. */
    callbackAttempts: z.number().int().positive().default(5),
    callbackBackoffMs: z.number().int().positive().default(500),
  })
  .strict();

export type HookConfig = z.infer<typeof hookSchema>;
export type WebhookChannelConfig = z.infer<typeof webhookChannelSchema>;
