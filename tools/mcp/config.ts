import { z } from 'zod';

/** One MCP server the gateway connects to. Its tools become `${name}__${tool}`. */
export const mcpServerSchema = z
  .object({
    /** Namespace: tools become `${name}__${tool}`. */
    name: z.string().regex(/^[a-zA-Z0-9_-]+$/, 'letters, digits, _ and - only'),
    transport: z.enum(['stdio', 'http']),
    /** stdio: the program to run (no shell). */
    command: z.string().optional(),
    args: z.array(z.string()).default([]),
    cwd: z.string().optional(),
    /** stdio: environment variables passed through by name (besides a safe default set: PATH, HOME, LANG...). */
    envAllow: z.array(z.string()).default([]),
    /** stdio: literal extra environment variables. */
    env: z.record(z.string(), z.string()).default({}),
    /** http: the Streamable HTTP endpoint. */
    url: z.string().url().optional(),
    /** http: the environment variable holding the bearer token (read at connect time). */
    bearerTokenEnv: z.string().optional(),
    /** Offer tools not annotated read-only too (they always go through approval). */
    trustWriteTools: z.boolean().default(false),
    /**
     * Believe the server's readOnlyHint: its read-only tools then run unasked like built-in reads (below strict).
     * Default: a server's own word is not enough, and its tools are treated as mutating (asked at supervised).
     */
    trusted: z.boolean().default(false),
    connectTimeoutMs: z.number().int().positive().default(10_000),
    callTimeoutMs: z.number().int().positive().default(60_000),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.transport === 'stdio' && !s.command) ctx.addIssue({ code: 'custom', path: ['command'], message: 'a stdio server needs a command' });
    if (s.transport === 'http' && !s.url) ctx.addIssue({ code: 'custom', path: ['url'], message: 'an http server needs a url' });
  });

export const mcpConfigSchema = z
  .object({
    servers: z
      .array(mcpServerSchema)
      .default([])
      .refine((list) => new Set(list.map((s) => s.name)).size === list.length, 'MCP server names must be unique'),
  })
  .strict()
  .prefault({});

export type McpServerConfig = z.infer<typeof mcpServerSchema>;
export type McpConfig = z.infer<typeof mcpConfigSchema>;
