import { z } from 'zod';
import { configError, issueProblems } from '../../src/channel/config.js';

/**
 * What the OpenAI-compatible API needs of the gateway's configuration: the agents it offers as
 * models, the request limits of http.*, and whether the chat rate limits apply to it. The app
 * hands this slice over (app/register-builtin-channels.ts); there is no channels.http section.
 */
export const httpChannelSchema = z
  .object({
    agents: z.record(z.string(), z.object({ description: z.string().optional() }).passthrough()),
    maxMessageChars: z.number().int().positive(),
    requestTimeoutMs: z.number().int().positive(),
    /** limits.applyToHttp: the per-sender and per-conversation limits count HTTP messages too. */
    applyLimits: z.boolean().default(false),
    /** Every provider slot takes OpenAI's JSON modes: response_format / text.format JSON is passed on, else refused. */
    jsonModes: z.boolean().default(false),
  })
  .strict();

export type HttpChannelConfig = z.infer<typeof httpChannelSchema>;

export function parseHttpConfig(raw: unknown): HttpChannelConfig {
  const parsed = httpChannelSchema.safeParse(raw ?? {});
  if (!parsed.success) throw configError(issueProblems(parsed.error.issues, httpChannelSchema, ['http'], raw ?? {}));
  return parsed.data;
}
