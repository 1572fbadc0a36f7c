import { z } from 'zod';
import type { EnvBinding } from '../../kernel/config-slice.js';

/** The HTTP server's slice of the configuration: `http.*`. */
export const httpSchema = z
  .object({
    port: z.number().int().min(0).max(65535).default(8787),
    host: z.string().default('127.0.0.1'),
    apiKeys: z.array(z.string().min(8, 'API keys must be at least 8 characters')).default([]),
    /** Keys for operators (approvals, conversations of any key); separate from user keys. */
    operatorKeys: z.array(z.string().min(8, 'operator keys must be at least 8 characters')).default([]),
    /** Serve the API without keys. Off by default: every endpoint authenticates. */
    openAccess: z.boolean().default(false),
    maxBodyBytes: z.number().int().positive().default(1_048_576),
    /** Longest a chat request waits for its turn to finish. */
    requestTimeoutMs: z.number().int().positive().default(600_000),
    /** Longest user message accepted, in characters. */
    maxMessageChars: z.number().int().positive().default(100_000),
  })
  .strict()
  .prefault({});

export const HTTP_ENV: EnvBinding[] = [
  { env: 'SWITCHBOARD_HTTP_PORT', path: ['port'], kind: 'int' },
  { env: 'SWITCHBOARD_HTTP_HOST', path: ['host'], kind: 'string' },
  { env: 'SWITCHBOARD_API_KEYS', path: ['apiKeys'], kind: 'list' },
  { env: 'SWITCHBOARD_OPEN_ACCESS', path: ['openAccess'], kind: 'bool' },
  { env: 'SWITCHBOARD_OPERATOR_KEYS', path: ['operatorKeys'], kind: 'list' },
];

export type HttpConfig = z.infer<typeof httpSchema>;
