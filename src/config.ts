import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { z } from 'zod';
import { type ConfigProblem, type EnvBinding, RESERVED_KEYS } from '../kernel/config-slice.js';
import { SwitchboardError } from '../kernel/errors.js';
import { moatSchema } from '../moat/config.js';
import { FALLBACK_ENV, fallbackSchema, PROVIDER_ENV, providerEnvSchema, providersSchema } from '../providers/config.js';
import { expandToolsShorthand, TOOLS_ENV, toolsSchema } from '../tools/config.js';
import { mcpConfigSchema } from '../tools/mcp/config.js';
import { accessSchema, pairingSchema } from './access-config.js';
import { type AgentConfig, agentsSchema } from './agents-config.js';
import { approvalsSchema } from './approvals/config.js';
import { attachmentsSchema } from './channel/attachments-config.js';
import { compactionSchema } from './compaction-config.js';
import { recordKey } from './config-record-key.js';
import { conversationsSchema } from './conversations-config.js';
import { takeoverSchema } from './handoffs/config.js';
import { HTTP_ENV, httpSchema } from './http/config.js';
import { LIMITS_ENV, limitsSchema } from './limits-config.js';
import { LOG_ENV, logSchema } from './log-config.js';
import { METRICS_ENV, metricsSchema } from './metrics-config.js';
import { QUEUE_ENV, queueSchema } from './queue-config.js';
import { schedulesSchema } from './schedules/config.js';
import { skillsSchema } from './skills-config.js';
import { webhooksSchema } from './webhooks/config.js';

/**
 * Configuration: a file (SWITCHBOARD_CONFIG, YAML or JSON) overlaid with
 * environment variables, validated with zod. Every key is documented in the README.
 */

/**
 * Each module owns its slice (schema, defaults, environment variables): they are composed here,
 * in the order the keys are listed (doctor, "allowed:" lists and maskConfig show them in it).
 */
const configSlices = {
  redisUrl: z.string().url().optional(),
  databaseUrl: z.string().optional(),
  /** Postgres connections per process (each process has its own pool). */
  databasePoolSize: z.number().int().min(1).max(200).default(10),
  dataDir: z.string().default('./data'),
  /** The embedded PGlite on a thread of its own (more turns per second) or on the gateway's event loop (less memory). */
  pgliteThread: z.boolean().default(true),
  http: httpSchema,
  metrics: metricsSchema,
  provider: providerEnvSchema,
  providers: providersSchema,
  fallback: fallbackSchema,
  conversations: conversationsSchema,
  limits: limitsSchema,
  compaction: compactionSchema,
  moat: moatSchema,
  approvals: approvalsSchema,
  /** Each chat channel's own section, validated by the channel (see channels/<name>/config.ts). */
  channels: z.record(recordKey, z.unknown()).default({}),
  /** Files that come with chat messages (images shown to the model). */
  attachments: attachmentsSchema,
  access: accessSchema,
  pairing: pairingSchema,
  webhooks: webhooksSchema,
  /** Scheduled and proactive messages (see src/schedules/). */
  schedules: schedulesSchema,
  /** Human takeover: operators take conversations over, the agent asks for one (see src/handoffs/). */
  takeover: takeoverSchema,
  skills: skillsSchema,
  /** MCP servers whose tools the agent may use (see tools/mcp/config.ts). */
  mcp: mcpConfigSchema,
  tools: toolsSchema,
  agents: agentsSchema,
  queue: queueSchema,
  /** On SIGTERM/SIGINT, how long running turns may take to finish before the process exits anyway (they are then retried elsewhere). */
  shutdownTimeoutMs: z.number().int().positive().default(30_000),
  log: logSchema,
};

export const configSchema = z.object(configSlices).strict();

export type Config = z.infer<typeof configSchema>;
export { PROVIDER_APIS, type SlotConfig } from '../providers/config.js';
export type { AgentConfig, ConfigProblem };
export { RESERVED_KEYS };

export class ConfigError extends SwitchboardError {
  readonly code = 'config_invalid';
  /** Every problem found (the message lists each, one line each); one problem parsed from the message when not given. */
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

/** A ConfigError carrying every problem; its message has one line per problem, the first problem first. */
export function configError(problems: ConfigProblem[]): ConfigError {
  return new ConfigError(problems.map(problemLine).join('\n'), { problems });
}

/** The line a problem is shown as: a problem without a key (a file that cannot be read...) is its message alone. */
export function problemLine(p: ConfigProblem): string {
  return p.path ? problemMessage(p) : p.message;
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
  const valueAt = (path: PropertyKey[]): unknown =>
    path.reduce<unknown>((v, k) => (v && typeof v === 'object' && Object.hasOwn(v, k) ? (v as Record<PropertyKey, unknown>)[k] : undefined), input);
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
        out.push({
          path,
          ...(env ? { env } : {}),
          message: `unknown key "${key}"${suggestion ? `: did you mean "${suggestion}"?` : allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}`,
          ...(suggestion ? { suggestion } : {}),
        });
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

/** yaml, loaded only when there is a file to read (it is most of what reading the configuration costs otherwise). */
function parseYaml(text: string): unknown {
  return (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);
}

/** Each slice's environment variables, under the key the slice is composed at. */
const SLICE_ENV: Array<[prefix: string[], bindings: EnvBinding[]]> = [
  [
    [],
    [
      { env: 'REDIS_URL', path: ['redisUrl'], kind: 'string' },
      { env: 'DATABASE_URL', path: ['databaseUrl'], kind: 'string' },
      { env: 'SWITCHBOARD_DB_POOL_SIZE', path: ['databasePoolSize'], kind: 'int' },
      { env: 'SWITCHBOARD_DATA', path: ['dataDir'], kind: 'string' },
      { env: 'SWITCHBOARD_PGLITE_THREAD', path: ['pgliteThread'], kind: 'bool' },
    ],
  ],
  [['http'], HTTP_ENV],
  [['metrics'], METRICS_ENV],
  [['provider'], PROVIDER_ENV],
  [['fallback'], FALLBACK_ENV],
  [['queue'], QUEUE_ENV],
  [['log'], LOG_ENV],
  [['limits'], LIMITS_ENV],
  [['tools'], TOOLS_ENV],
];

/** Environment variables and the config path they set. */
export const ENV_KEYS: EnvBinding[] = SLICE_ENV.flatMap(([prefix, bindings]) => bindings.map((b) => ({ ...b, path: [...prefix, ...b.path] })));

function setPath(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let cur = obj;
  for (const p of path.slice(0, -1)) {
    if (typeof cur[p] !== 'object' || cur[p] === null) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[path[path.length - 1]!] = value;
}

function envValue(env: string, raw: string, kind: EnvBinding['kind']): unknown {
  switch (kind) {
    case 'string':
      return raw;
    case 'int': {
      if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${env}: expected a whole number, got "${raw}"`);
      return Number(raw);
    }
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
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

/** Where "__proto__" keys are in raw configuration (zod would drop them silently). */
function protoKeyPaths(v: unknown, path: string[] = []): string[] {
  if (!v || typeof v !== 'object') return [];
  return Object.entries(v).flatMap(([k, x]) => (k === '__proto__' ? [[...path, k].join('.')] : protoKeyPaths(x, [...path, k])));
}

/** The configuration if it is valid; each slice that is valid on its own; every problem of the file and the environment. */
export interface ParsedConfig {
  config?: Config;
  slices: Partial<Config>;
  /** The top-level keys whose slice the schema refused (absent from `slices`). */
  invalid: Array<keyof Config>;
  problems: ConfigProblem[];
}

/**
 * File + environment through every slice's schema, collecting every problem (an unreadable file
 * still throws ConfigError: there is nothing to check). The slices that are valid on their own are
 * returned too, so that the checks that need them (slots, channels) run although another slice is wrong.
 */
export function parseConfig(env: Env = process.env, overrides: Record<string, unknown> = {}): ParsedConfig {
  const raw: Record<string, unknown> = env.SWITCHBOARD_CONFIG ? readConfigFile(env.SWITCHBOARD_CONFIG) : {};
  expandToolsShorthand(raw.tools);
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
  for (const path of [...protoKeyPaths(raw), ...protoKeyPaths(overrides)]) problems.push({ path, message: `must not be one of ${RESERVED_KEYS.join(', ')}` });
  for (const [k, v] of Object.entries(overrides)) raw[k] = v;
  const parsed = configSchema.safeParse(raw);
  let slices: Partial<Config>;
  const invalid: Array<keyof Config> = [];
  if (parsed.success) slices = parsed.data;
  else {
    // Every problem, not only the first; an environment variable that could not be read is not reported twice.
    problems.push(...issueProblems(parsed.error.issues, configSchema, [], raw).filter((p) => !problems.some((q) => q.path === p.path)));
    slices = {};
    for (const [key, schema] of Object.entries(configSlices) as Array<[keyof Config, z.ZodType]>) {
      const one = schema.safeParse(raw[key]);
      if (one.success) (slices as Record<string, unknown>)[key] = one.data;
      else invalid.push(key);
    }
  }
  if (slices.agents && !slices.agents.default) problems.push({ path: 'agents', message: 'an agent named "default" is required' });
  return problems.length ? { slices, invalid, problems } : { config: parsed.data!, slices, invalid, problems };
}

/** Loads file + environment. Throws one ConfigError listing every problem, each naming its key. */
export function loadConfig(env: Env = process.env, overrides: Record<string, unknown> = {}): Config {
  const { config, problems } = parseConfig(env, overrides);
  if (!config) throw configError(problems);
  return config;
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
