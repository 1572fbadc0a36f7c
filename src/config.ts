import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { mcpConfigSchema } from '../tools/mcp/config.js';
import { SwitchboardError } from '../kernel/errors.js';

/**
 * Configuration: a file (SWITCHBOARD_CONFIG, YAML or JSON) overlaid with
 * environment variables, validated with zod. Every key is documented in the README.
 */

/**
 * Names every plain object has through Object.prototype: never a key of a
 * configured record (agents, channels, operators per channel...), since those
 * are looked up by names that come from requests and messages.
 */
export const RESERVED_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'toLocaleString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', 'propertyIsEnumerable', '__defineGetter__', '__defineSetter__', '__lookupGetter__', '__lookupSetter__'] as const;
const NOT_RESERVED = new RegExp(`^(?!(?:${RESERVED_KEYS.join('|')})$)`);
const recordKey = z.string().regex(NOT_RESERVED, `must not be one of ${RESERVED_KEYS.join(', ')}`);

const agentSchema = z.object({
  description: z.string().default('The Switchboard agent'),
  /** Extra system prompt text for this agent, appended after prompts/identity.md and rules.md. */
  instructions: z.string().optional(),
  /** Most model calls in one turn. */
  maxIterations: z.number().int().positive().default(90),
  /** Most transcript messages loaded into a turn. */
  historyLimit: z.number().int().positive().default(200),
  maxTokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
}).strict();

export const PROVIDER_APIS = [
  'anthropic-messages',
  'openai-completions',
  'openai-responses',
  'azure-openai-responses',
  'google-generative-ai',
  'google-vertex',
  'mistral-conversations',
  'bedrock-converse-stream',
] as const;

/** One slot of the provider fallback chain. */
const slotSchema = z
  .object({
    id: z.string().regex(/^[a-zA-Z0-9._-]+$/, 'slot ids are letters, digits and . _ -'),
    /** One of pi-ai's API names. */
    api: z.enum(PROVIDER_APIS),
    model: z.string().min(1),
    /** pi-ai provider name (anthropic, openai, google, groq...): finds the model in pi-ai's catalog. */
    provider: z.string().optional(),
    baseUrl: z.string().url().optional(),
    /** Name of the environment variable holding this slot's key. */
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name').optional(),
    contextWindow: z.number().int().positive().optional(),
    maxTokens: z.number().int().positive().optional(),
    reasoning: z.boolean().optional(),
    /** pi-ai compat flags for OpenAI-compatible servers (supportsDeveloperRole, maxTokensField...). */
    compat: z.record(recordKey, z.unknown()).optional(),
  })
  .strict();

export type SlotConfig = z.infer<typeof slotSchema>;

/** tools.sandbox: the execution boundary of shell_exec (see tools/sandbox/ and the README's Security section). */
const sandboxSchema = z
  .object({
    /** bwrap: every command in its own namespaces under bubblewrap; none: as the gateway's user (start and doctor warn). */
    mode: z.enum(['bwrap', 'none']).default('bwrap'),
    /** none: no network at all; egress: out only through the gateway's proxy, which applies the SSRF guard to every connection. */
    network: z.enum(['none', 'egress']).default('none'),
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

export const configSchema = z
  .object({
    redisUrl: z.string().url().optional(),
    databaseUrl: z.string().optional(),
    /** Postgres connections per process (each process has its own pool). */
    databasePoolSize: z.number().int().min(1).max(200).default(10),
    dataDir: z.string().default('./data'),
    http: z
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
      .prefault({}),
    provider: z
      .object({
        anthropicApiKey: z.string().optional(),
        openaiApiKey: z.string().optional(),
        openaiBaseUrl: z.string().url().optional(),
        model: z.string().optional(),
        contextWindow: z.number().int().positive().optional(),
        maxTokens: z.number().int().positive().optional(),
      })
      .strict()
      .prefault({}),
    /** The fallback chain, in order. Without it, the provider from the environment is the whole chain. */
    providers: z.array(slotSchema).min(1).optional(),
    fallback: z
      .object({
        /** Escalating cooldowns of a failing slot: 30 s, then 1 min, then 5 min (the last repeats). */
        cooldownsMs: z.array(z.number().int().positive()).min(1).default([30_000, 60_000, 300_000]),
        /** A slot whose key is refused sits out this long. */
        authCooldownMs: z.number().int().positive().default(3_600_000),
        /** With every slot failing and nothing said yet, keep retrying this long before giving up. */
        busyRetryMs: z.number().int().nonnegative().default(60_000),
        /** Tell the user once that providers are busy after this long. */
        busyNoticeMs: z.number().int().nonnegative().default(5_000),
        /** Add a short notice in the channel when a fallback slot answered. */
        notice: z.boolean().default(false),
        timeouts: z
          .object({
            /** Until the response headers arrive. */
            connectMs: z.number().int().positive().default(15_000),
            /** Until the first streamed token. */
            firstTokenMs: z.number().int().positive().default(60_000),
            /** Longest silence between two streamed chunks. */
            idleMs: z.number().int().positive().default(30_000),
            /** The whole call. */
            totalMs: z.number().int().positive().default(600_000),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    conversations: z
      .object({
        /** What happens to messages that arrive while a turn runs: steer | followup | collect | interrupt. */
        queueMode: z.enum(['steer', 'followup', 'collect', 'interrupt']).default('followup'),
        /** Per-channel defaults (a conversation can change its own with /mode). */
        queueModeByChannel: z.record(recordKey, z.enum(['steer', 'followup', 'collect', 'interrupt'])).default({}),
        /** collect: start once no message arrived for this long. */
        collectQuietMs: z.number().int().nonnegative().default(1_500),
        /** Most messages waiting in one conversation; beyond it the new one is dropped and the sender told. */
        maxWaiting: z.number().int().positive().default(20),
      })
      .strict()
      .prefault({}),
    limits: z
      .object({
        /** Messages per sender: a burst of `burst`, refilled at `perMinute`. 0 turns a limit off. */
        sender: z.object({ burst: z.number().int().nonnegative().default(20), perMinute: z.number().nonnegative().default(30) }).strict().prefault({}),
        /** Messages per conversation. */
        conversation: z.object({ burst: z.number().int().nonnegative().default(30), perMinute: z.number().nonnegative().default(60) }).strict().prefault({}),
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
            (v) => (v === 'off' || v === false || v === 0 || v === '0' ? { perMinute: 0 } : typeof v === 'number' || (typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v)) ? { perMinute: Number(v) } : v),
            z
              .object({ perMinute: z.number().nonnegative().default(60), burst: z.number().int().nonnegative().optional() }, { error: 'expected off, a number of requests per minute, or { perMinute, burst }' })
              .strict()
              .transform((l) => ({ perMinute: l.perMinute, burst: l.perMinute === 0 ? 0 : (l.burst ?? Math.max(1, Math.ceil(l.perMinute))) })),
          )
          .prefault({}),
        /** Per-turn budgets, checked before each model call (0: none). */
        turnTokens: z.number().int().nonnegative().default(0),
        turnCostUsd: z.number().nonnegative().default(0),
      })
      .strict()
      .prefault({}),
    compaction: z
      .object({
        /** Compact when the context would exceed this share of the model's window. */
        threshold: z.number().gt(0).lt(1).default(0.7),
        /** Share of the window kept as recent messages after compacting. */
        keepRecent: z.number().gt(0).lt(1).default(0.3),
        /** Id of a (cheaper) provider slot that writes the summaries first; the rest of the chain backs it up. */
        summarizerSlot: z.string().optional(),
      })
      .strict()
      .prefault({}),
    moat: z
      .object({
        /** What to do with secrets in a user's message: redact them before the model sees them, or block the message. */
        secrets: z.enum(['redact', 'block']).default('redact'),
        honesty: z
          .object({
            /** Id of a (cheap) provider slot asked about claims the honesty rules cannot decide; it can only add a correction. Unset: rules only. */
            judgeSlot: z.string().regex(/^[a-zA-Z0-9._-]+$/, 'slot ids are letters, digits and . _ -').optional(),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    approvals: z
      .object({
        /** How long an approval request waits before it expires (fail-closed: not run). */
        timeoutMs: z.number().int().positive().default(15 * 60_000),
        /** strict | supervised | trusted: what runs without asking (see the README). */
        autonomy: z.enum(['strict', 'supervised', 'trusted']).default('supervised'),
        /** Tiers at which the person who asked may approve their own request (never dangerous). */
        requesterMay: z.array(z.enum(['safe', 'caution'])).default([]),
        /** Operator identities per channel (user ids, phone numbers, email addresses). */
        operators: z.record(recordKey, z.array(z.string())).default({}),
        /** Where requests are also posted for operators: a channel and its place (Slack/Discord channel id). */
        operatorChannel: z.object({ channel: z.string(), target: z.string() }).strict().optional(),
      })
      .strict()
      .prefault({}),
    /** Each chat channel's own section, validated by the channel (see channels/<name>/config.ts). */
    channels: z.record(recordKey, z.unknown()).default({}),
    /** Who may talk to the agent, per channel. Default: allowlist with nobody on it. */
    access: z
      .record(
        recordKey,
        z
          .object({
            policy: z.enum(['allowlist', 'pairing', 'open', 'disabled']).default('allowlist'),
            allow: z.array(z.string()).default([]),
          })
          .strict(),
      )
      .default({}),
    pairing: z
      .object({
        codeTtlMs: z.number().int().positive().default(3_600_000),
        maxPendingPerChannel: z.number().int().positive().default(20),
      })
      .strict()
      .prefault({}),
    webhooks: z
      .object({
        /** Subscribers to outbound events (more can be added with `switchboard webhooks add`). */
        subscribers: z
          .array(
            z
              .object({
                id: z.string().regex(/^[a-zA-Z0-9_-]+$/),
                url: z.string().url(),
                secretEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
                events: z.array(z.enum(['turn.completed', 'turn.failed', 'approval.requested', 'approval.decided', 'provider.fallback', '*'])).min(1),
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
      .prefault({}),
    skills: z
      .object({
        /** A folder of operator playbooks (markdown, optional `summary:` front matter), next to the bundled prompts/skills. */
        dir: z.string().optional(),
      })
      .strict()
      .prefault({}),
    /** MCP servers whose tools the agent may use (see tools/mcp/config.ts). */
    mcp: mcpConfigSchema,
    tools: z
      .object({
        /** Built-in tools offered to the model (names); default all. */
        enabled: z.array(z.string()).optional(),
        /** Largest tool output handed to the model, in bytes. */
        outputCapBytes: z.number().int().positive().default(16 * 1024),
        /** Offer only the tools relevant to the request (the planner guard). */
        planner: z.boolean().default(true),
        /** Where shell commands run (tools/sandbox): `bwrap` (default) or `none`; the short form `sandbox: none` is the mode alone. */
        sandbox: z.preprocess((v) => (typeof v === 'string' ? { mode: v } : v), sandboxSchema).prefault({}),
      })
      .strict()
      .prefault({}),
    agents: z.record(recordKey.regex(/^[a-zA-Z0-9._-]+$/, 'agent names are letters, digits and . _ -'), agentSchema).default({ default: agentSchema.parse({}) }),
    queue: z
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
      })
      .strict()
      .prefault({}),
    /** On SIGTERM/SIGINT, how long running turns may take to finish before the process exits anyway (they are then retried elsewhere). */
    shutdownTimeoutMs: z.number().int().positive().default(30_000),
    log: z
      .object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') })
      .strict()
      .prefault({}),
  })
  .strict();

export type Config = z.infer<typeof configSchema>;
export type AgentConfig = z.infer<typeof agentSchema>;

/** One problem in the configuration: the key, its environment variable if it has one, and what is wrong. */
export interface ConfigProblem {
  path: string;
  env?: string;
  message: string;
  /** The closest allowed name, for an unknown key or value. */
  suggestion?: string;
}

export class ConfigError extends SwitchboardError {
  readonly code = 'config_invalid';
  /** Every problem found (the message is the first); one problem parsed from the message when not given. */
  readonly problems: ConfigProblem[];
  constructor(message: string, opts: { cause?: unknown; problems?: ConfigProblem[] } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ConfigError';
    const problems = opts.problems;
    const m = /^invalid configuration at "([^"]*)"(?: \(([A-Za-z_][A-Za-z0-9_]*)\))?: ([\s\S]*)$/.exec(message);
    this.problems = problems?.length ? problems : [m ? { path: m[1]!, ...(m[2] ? { env: m[2] } : {}), message: m[3]! } : { path: '', message }];
  }
}

export function problemMessage(p: ConfigProblem): string {
  return `invalid configuration at "${p.path || '(root)'}"${p.env ? ` (${p.env})` : ''}: ${p.message}`;
}

/** A ConfigError carrying every problem; its message is the first problem, followed by how many more there are. */
export function configError(problems: ConfigProblem[]): ConfigError {
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''}: run switchboard doctor)` : '';
  return new ConfigError(problemMessage(problems[0]!) + more, { problems });
}

/** Edit distance, for "did you mean". */
export function levenshtein(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/** The allowed name closest to `word`, when it is close enough to be a typo. */
export function didYouMean(word: string, allowed: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const a of allowed) {
    const d = levenshtein(word, a);
    if (d < bestD) [best, bestD] = [a, d];
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(word.length / 3)) && bestD < Math.max(word.length, 1) ? best : undefined;
}

/** The object keys a schema allows at a path (through defaults, optionals, preprocessing, records and arrays). */
function keysAt(schema: z.ZodType, path: PropertyKey[]): string[] {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let cur: any = schema;
  const unwrap = (s: any): any => {
    for (let n = 0; s && n < 20; n++) {
      const d = s._zod?.def;
      if (!d) return s;
      if (d.innerType) s = d.innerType;
      else if (d.type === 'pipe') s = d.out?._zod?.def?.type === 'transform' ? d.in : d.out;
      else if (d.type === 'lazy' && d.getter) s = d.getter();
      else return s;
    }
    return s;
  };
  cur = unwrap(cur);
  for (const seg of path) {
    const d = cur?._zod?.def;
    if (!d) return [];
    if (d.type === 'object') cur = d.shape?.[seg as string];
    else if (d.type === 'record') cur = d.valueType;
    else if (d.type === 'array') cur = d.element;
    else return [];
    cur = unwrap(cur);
  }
  const d = cur?._zod?.def;
  return d?.type === 'object' && d.shape ? Object.keys(d.shape) : [];
}

/** Every zod issue as a problem naming the key (under `prefix`), its environment variable and a "did you mean". */
export function issueProblems(issues: readonly z.core.$ZodIssue[], schema: z.ZodType, prefix: string[] = [], input?: unknown): ConfigProblem[] {
  // zod leaves the value out of its issues: it is looked up in the input that was parsed.
  const valueAt = (path: PropertyKey[]): unknown => path.reduce<unknown>((v, k) => (v && typeof v === 'object' && Object.hasOwn(v, k) ? (v as Record<PropertyKey, unknown>)[k] : undefined), input);
  const out: ConfigProblem[] = [];
  const envOf = (path: string) => ENV_KEYS.find((k) => path === k.path.join('.') || path.startsWith(k.path.join('.') + '.'))?.env;
  for (const issue of issues) {
    const base = [...prefix, ...issue.path.map(String)];
    if (issue.code === 'unrecognized_keys') {
      const allowed = keysAt(schema, issue.path);
      for (const key of issue.keys) {
        const path = [...base, key].join('.');
        const suggestion = didYouMean(key, allowed);
        const env = envOf(path);
        out.push({ path, ...(env ? { env } : {}), message: `unknown key "${key}"${suggestion ? `: did you mean "${suggestion}"?` : allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}`, ...(suggestion ? { suggestion } : {}) });
      }
      continue;
    }
    const path = base.join('.');
    const env = envOf(path);
    let message = issue.message;
    let suggestion: string | undefined;
    if (issue.code === 'invalid_value' && issue.values.every((v) => typeof v === 'string')) {
      const given = issue.input ?? valueAt(issue.path);
      suggestion = typeof given === 'string' ? didYouMean(given, issue.values as string[]) : undefined;
      message = `${typeof given === 'string' ? `"${given}" is not one of ` : 'expected one of '}${(issue.values as string[]).join(', ')}${suggestion ? `: did you mean "${suggestion}"?` : ''}`;
    }
    out.push({ path, ...(env ? { env } : {}), message, ...(suggestion ? { suggestion } : {}) });
  }
  return out;
}

type Env = Record<string, string | undefined>;

/** Environment variables and the config path they set. */
export const ENV_KEYS: Array<{ env: string; path: string[]; kind: 'string' | 'int' | 'list' | 'bool' }> = [
  { env: 'REDIS_URL', path: ['redisUrl'], kind: 'string' },
  { env: 'DATABASE_URL', path: ['databaseUrl'], kind: 'string' },
  { env: 'SWITCHBOARD_DB_POOL_SIZE', path: ['databasePoolSize'], kind: 'int' },
  { env: 'SWITCHBOARD_DATA', path: ['dataDir'], kind: 'string' },
  { env: 'SWITCHBOARD_HTTP_PORT', path: ['http', 'port'], kind: 'int' },
  { env: 'SWITCHBOARD_HTTP_HOST', path: ['http', 'host'], kind: 'string' },
  { env: 'SWITCHBOARD_API_KEYS', path: ['http', 'apiKeys'], kind: 'list' },
  { env: 'SWITCHBOARD_OPEN_ACCESS', path: ['http', 'openAccess'], kind: 'bool' },
  { env: 'SWITCHBOARD_OPERATOR_KEYS', path: ['http', 'operatorKeys'], kind: 'list' },
  { env: 'ANTHROPIC_API_KEY', path: ['provider', 'anthropicApiKey'], kind: 'string' },
  { env: 'OPENAI_API_KEY', path: ['provider', 'openaiApiKey'], kind: 'string' },
  { env: 'OPENAI_BASE_URL', path: ['provider', 'openaiBaseUrl'], kind: 'string' },
  { env: 'SWITCHBOARD_MODEL', path: ['provider', 'model'], kind: 'string' },
  { env: 'SWITCHBOARD_WORKER_CONCURRENCY', path: ['queue', 'concurrency'], kind: 'int' },
  { env: 'SWITCHBOARD_QUEUE_PREFIX', path: ['queue', 'prefix'], kind: 'string' },
  { env: 'SWITCHBOARD_LOCK_DURATION_MS', path: ['queue', 'lockDurationMs'], kind: 'int' },
  { env: 'SWITCHBOARD_STALLED_INTERVAL_MS', path: ['queue', 'stalledIntervalMs'], kind: 'int' },
  { env: 'SWITCHBOARD_LOG_LEVEL', path: ['log', 'level'], kind: 'string' },
  { env: 'SWITCHBOARD_MAX_TURNS_PER_KEY', path: ['limits', 'maxConcurrentTurnsPerKey'], kind: 'int' },
  { env: 'SWITCHBOARD_MAX_TURNS_PER_SENDER', path: ['limits', 'maxConcurrentTurnsPerSender'], kind: 'int' },
  { env: 'SWITCHBOARD_HTTP_RATE_LIMIT', path: ['limits', 'apiKey'], kind: 'string' },
  { env: 'SWITCHBOARD_SANDBOX', path: ['tools', 'sandbox', 'mode'], kind: 'string' },
  { env: 'SWITCHBOARD_SANDBOX_NETWORK', path: ['tools', 'sandbox', 'network'], kind: 'string' },
  { env: 'SWITCHBOARD_BWRAP', path: ['tools', 'sandbox', 'bwrapPath'], kind: 'string' },
];

function setPath(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let cur = obj;
  for (const p of path.slice(0, -1)) {
    if (typeof cur[p] !== 'object' || cur[p] === null) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[path[path.length - 1]!] = value;
}

function envValue(env: string, raw: string, kind: 'string' | 'int' | 'list' | 'bool'): unknown {
  switch (kind) {
    case 'string':
      return raw;
    case 'int': {
      if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${env}: expected a whole number, got "${raw}"`);
      return Number(raw);
    }
    case 'list':
      return raw.split(',').map((s) => s.trim()).filter(Boolean);
    case 'bool':
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off)$/i.test(raw)) return false;
      throw new ConfigError(`${env}: expected true or false, got "${raw}"`);
  }
}

export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(resolve(path), 'utf8');
  } catch (err) {
    throw new ConfigError(`SWITCHBOARD_CONFIG: cannot read ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = parseYaml(text); // YAML is a superset of JSON
  } catch (err) {
    throw new ConfigError(`SWITCHBOARD_CONFIG: ${path} is not valid YAML or JSON: ${(err as Error).message}`);
  }
  if (data == null) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw new ConfigError(`SWITCHBOARD_CONFIG: ${path} must hold an object at the top level`);
  return data as Record<string, unknown>;
}

/** Where a "__proto__" key is in raw configuration (zod would drop it silently), or null. */
function protoKeyPath(v: unknown, path: string[] = []): string | null {
  if (!v || typeof v !== 'object') return null;
  for (const [k, x] of Object.entries(v)) {
    if (k === '__proto__') return [...path, k].join('.');
    const inner = protoKeyPath(x, [...path, k]);
    if (inner) return inner;
  }
  return null;
}

/** Loads file + environment. Throws ConfigError naming the bad key. */
export function loadConfig(env: Env = process.env, overrides: Record<string, unknown> = {}): Config {
  const raw: Record<string, unknown> = env.SWITCHBOARD_CONFIG ? readConfigFile(env.SWITCHBOARD_CONFIG) : {};
  // `tools.sandbox: none` is short for `{ mode: none }`; expand it so the environment can add to it.
  const tools = raw.tools as Record<string, unknown> | undefined;
  if (tools && typeof tools === 'object' && typeof tools.sandbox === 'string') tools.sandbox = { mode: tools.sandbox };
  const problems: ConfigProblem[] = [];
  for (const k of ENV_KEYS) {
    const v = env[k.env];
    if (v === undefined || v === '') continue;
    try {
      setPath(raw, k.path, envValue(k.env, v, k.kind));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push({ path: k.path.join('.'), env: k.env, message: err.message.replace(`${k.env}: `, '') });
    }
  }
  // A "__proto__" key is refused, not dropped (the other Object.prototype names are refused by the schema).
  const proto = protoKeyPath(raw) ?? protoKeyPath(overrides);
  if (proto) throw new ConfigError(`invalid configuration at "${proto}": must not be one of ${RESERVED_KEYS.join(', ')}`);
  for (const [k, v] of Object.entries(overrides)) raw[k] = v;
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    // Every problem, not only the first; an environment variable that could not be read is not reported twice.
    problems.push(...issueProblems(parsed.error.issues, configSchema, [], raw).filter((p) => !problems.some((q) => q.path === p.path)));
  }
  if (problems.length) throw configError(problems);
  const cfg = parsed.data!;
  if (!cfg.agents.default) throw new ConfigError('invalid configuration at "agents": an agent named "default" is required');
  return cfg;
}

const SECRET_KEYS = /key|secret|token|password|pass$|authorization/i;
/**
 * Keys that look secret but hold no secret: a variable's NAME (apiKeyEnv, botTokenEnv, secretEnv,
 * passwordEnv, envAllow...) or a policy value (moat.secrets: redact | block). These are shown.
 */
const NAME_KEYS = /Env$|^envAllow$|^secrets$/;

/** The configuration with secrets masked, for doctor and logs. */
export function maskConfig(cfg: Config): unknown {
  const mask = (v: string) => (v.length <= 8 ? '****' : `${v.slice(0, 3)}…${v.slice(-2)} (${v.length} chars)`);
  const maskUrl = (u: string) => u.replace(/\/\/([^:/@]*):([^@]*)@/, (_m, user) => `//${user}:****@`);
  const walk = (v: unknown, key: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    if (typeof v === 'string') {
      if (SECRET_KEYS.test(key) && !NAME_KEYS.test(key)) return mask(v);
      if (/url$/i.test(key)) return maskUrl(v);
    }
    return v;
  };
  return walk(cfg, '');
}
