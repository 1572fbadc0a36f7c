import { z } from 'zod';
import type { EnvBinding } from '../kernel/config-slice.js';
import { SANDBOX_MODES, SANDBOX_NETWORKS } from './sandbox/types.js';

/** The tools' slice of the configuration: `tools.*` (the MCP servers are their own slice, tools/mcp/config.ts). */

/** tools.sandbox: the execution boundary of shell_exec (see tools/sandbox/ and the README's Security section). */
export const sandboxSchema = z
  .object({
    /** bwrap: every command in its own namespaces under bubblewrap; none: as the gateway's user (start and doctor warn). */
    mode: z.enum(SANDBOX_MODES).default('bwrap'),
    /** none: no network at all; egress: out only through the gateway's proxy, which applies the SSRF guard to every connection. */
    network: z.enum(SANDBOX_NETWORKS).default('none'),
    /** Hosts and address ranges the egress proxy lets through although the SSRF guard would refuse them (e.g. an internal package mirror). */
    allowHosts: z.array(z.string()).default([]),
    allowCidrs: z.array(z.string()).default([]),
    /** Per-call limits. */
    cpuSeconds: z.number().int().positive().max(3600).default(60),
    memoryMb: z.number().int().min(16).max(65536).default(1024),
    processes: z.number().int().min(8).max(65536).default(256),
    fileSizeMb: z.number().int().positive().max(65536).default(256),
    openFiles: z.number().int().min(16).max(65536).default(1024),
    tmpMb: z.number().int().positive().max(65536).default(256),
    /** The host user and group commands run as when the gateway runs as root (default: nobody/nogroup). */
    uid: z.number().int().min(1).default(65534),
    gid: z.number().int().min(1).default(65534),
    /** The bubblewrap program (default: `bwrap` on PATH). */
    bwrapPath: z.string().min(1).optional(),
  })
  .strict();

export const toolsSchema = z
  .object({
    /** Built-in tools offered to the model (names); default all. */
    enabled: z.array(z.string()).optional(),
    /** Largest tool output handed to the model, in bytes. */
    outputCapBytes: z
      .number()
      .int()
      .positive()
      .default(16 * 1024),
    /** Offer only the tools relevant to the request (the planner guard). */
    planner: z.boolean().default(true),
    /** Where shell commands run (tools/sandbox): `bwrap` (default) or `none`; the short form `sandbox: none` is the mode alone. */
    sandbox: z.preprocess((v) => (typeof v === 'string' ? { mode: v } : v), sandboxSchema).prefault({}),
  })
  .strict()
  .prefault({});

/** Environment variables of the `tools` slice. */
export const TOOLS_ENV: EnvBinding[] = [
  { env: 'SWITCHBOARD_SANDBOX', path: ['sandbox', 'mode'], kind: 'string' },
  { env: 'SWITCHBOARD_SANDBOX_NETWORK', path: ['sandbox', 'network'], kind: 'string' },
  { env: 'SWITCHBOARD_BWRAP', path: ['sandbox', 'bwrapPath'], kind: 'string' },
];

/** `tools.sandbox: none` is short for `{ mode: none }`: expanded in raw configuration so the environment can add to it. */
export function expandToolsShorthand(tools: unknown): void {
  if (tools && typeof tools === 'object' && typeof (tools as Record<string, unknown>).sandbox === 'string') {
    const t = tools as Record<string, unknown>;
    t.sandbox = { mode: t.sandbox };
  }
}

export type ToolsConfig = z.infer<typeof toolsSchema>;
export type SandboxConfig = z.infer<typeof sandboxSchema>;
