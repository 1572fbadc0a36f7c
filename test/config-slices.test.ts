/**
 * Issue #20: the configuration is composed of slices owned by their modules. Each slice parses its
 * own defaults; the enums come from the constant lists the code uses; start and doctor report every
 * problem of the file and the environment at once; the README documents every key.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { z } from 'zod';
import { EVENT_TYPES } from '../kernel/jobs.js';
import { packageRoot } from '../kernel/paths.js';
import { QUEUE_MODES } from '../kernel/queue-modes.js';
import { AUTONOMY_LEVELS, SELF_APPROVABLE_TIERS } from '../moat/approval-engine.js';
import { moatSchema } from '../moat/config.js';
import { MESSAGE_SECRET_POLICIES } from '../moat/secrets.js';
import { fallbackSchema, PROVIDER_APIS, providerEnvSchema, providersSchema, slotSchema } from '../providers/config.js';
import { ACCESS_POLICIES, accessSchema, pairingSchema } from '../src/access-config.js';
import { agentsSchema } from '../src/agents-config.js';
import { approvalsSchema } from '../src/approvals/config.js';
import { attachmentsSchema } from '../src/channel/attachments-config.js';
import { compactionSchema } from '../src/compaction-config.js';
import { ConfigError, configSchema, loadConfig, problemMessage } from '../src/config.js';
import { conversationsSchema } from '../src/conversations-config.js';
import { takeoverSchema } from '../src/handoffs/config.js';
import { httpSchema } from '../src/http/config.js';
import { limitsSchema } from '../src/limits-config.js';
import { LOG_LEVELS } from '../src/log.js';
import { logSchema } from '../src/log-config.js';
import { metricsSchema } from '../src/metrics-config.js';
import { queueSchema } from '../src/queue-config.js';
import { schedulesSchema } from '../src/schedules/config.js';
import { skillsSchema } from '../src/skills-config.js';
import { webhooksSchema } from '../src/webhooks/config.js';
import { toolsSchema } from '../tools/config.js';
import { mcpConfigSchema } from '../tools/mcp/config.js';
import { SANDBOX_MODES, SANDBOX_NETWORKS } from '../tools/sandbox/types.js';

// zod's schema tree, read through its definitions (defaults, optionals, preprocessing unwrapped).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;
function unwrap(s: Any): Any {
  for (let n = 0; s && n < 20; n++) {
    const d = s._zod?.def;
    if (d?.innerType) s = d.innerType;
    else if (d?.type === 'pipe') s = d.in?._zod?.def?.type === 'transform' ? d.out : d.in;
    else return s;
  }
  return s;
}
function at(s: z.ZodType, path: string): Any {
  let cur = unwrap(s);
  for (const seg of path.split('.')) {
    while (cur._zod.def.type === 'array') cur = unwrap(cur._zod.def.element);
    const d = cur._zod.def;
    cur = unwrap(d.type === 'object' ? d.shape[seg] : d.type === 'record' ? d.valueType : d.type === 'array' ? d.element : undefined);
    if (!cur) throw new Error(`no ${path}`);
  }
  return cur;
}
/** The options of the enum at a path (through arrays and records). */
function options(s: z.ZodType, path: string): string[] {
  let e = at(s, path);
  while (e._zod.def.type === 'array' || e._zod.def.type === 'record') e = unwrap(e._zod.def.type === 'array' ? e._zod.def.element : e._zod.def.valueType);
  expect(e._zod.def.type, path).toBe('enum');
  return e.options as string[];
}
/** Every key path of a schema; `*` stands for a record's names, array elements are transparent. */
function keyPaths(s: z.ZodType, prefix: string[] = []): string[] {
  const d = unwrap(s)._zod.def;
  if (d.type === 'object') return Object.entries(d.shape).flatMap(([k, v]) => [[...prefix, k].join('.'), ...keyPaths(v as z.ZodType, [...prefix, k])]);
  if (d.type === 'record') return keyPaths(d.valueType, [...prefix, '*']);
  if (d.type === 'array') return keyPaths(d.element, prefix);
  return [];
}

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), ...args], {
    env: { PATH: process.env.PATH ?? '', SWITCHBOARD_DATA: mkdtempSync(join(tmpdir(), 'sb-slices-')), SWITCHBOARD_HTTP_PORT: '0', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
function configFile(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'sb-slices-cfg-')), 'switchboard.yaml');
  writeFileSync(file, yaml);
  return file;
}

describe('configuration slices', () => {
  const slices: Record<string, z.ZodType> = {
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
    attachments: attachmentsSchema,
    access: accessSchema,
    pairing: pairingSchema,
    webhooks: webhooksSchema,
    schedules: schedulesSchema,
    takeover: takeoverSchema,
    skills: skillsSchema,
    mcp: mcpConfigSchema,
    tools: toolsSchema,
    agents: agentsSchema,
    queue: queueSchema,
    log: logSchema,
  };

  it('each slice parses its own defaults, and they are the whole configuration defaults', () => {
    const whole = configSchema.parse({}) as Record<string, unknown>;
    for (const [key, schema] of Object.entries(slices)) expect(schema.parse(undefined), key).toEqual(whole[key]);
    expect(httpSchema.parse(undefined)).toMatchObject({ port: 8787, host: '127.0.0.1', apiKeys: [], openAccess: false });
    expect(toolsSchema.parse(undefined).sandbox).toMatchObject({ mode: 'bwrap', network: 'none', cpuSeconds: 60, uid: 65534 });
    expect(toolsSchema.parse({ sandbox: 'none' }).sandbox.mode).toBe('none');
    expect(fallbackSchema.parse(undefined)).toMatchObject({ cooldownsMs: [30_000, 60_000, 300_000], timeouts: { connectMs: 15_000 } });
    expect(conversationsSchema.parse(undefined)).toEqual({ queueMode: 'followup', queueModeByChannel: {}, collectQuietMs: 1_500, maxWaiting: 20 });
    expect(limitsSchema.parse(undefined).apiKey).toEqual({ perMinute: 60, burst: 60 });
    expect(approvalsSchema.parse(undefined)).toMatchObject({ autonomy: 'supervised', timeoutMs: 900_000, requesterMay: [] });
    expect(moatSchema.parse(undefined)).toEqual({ secrets: 'redact', honesty: {} });
    expect(agentsSchema.parse(undefined).default).toMatchObject({ maxIterations: 90, historyLimit: 200 });
    expect(queueSchema.parse(undefined)).toMatchObject({ prefix: 'sb', concurrency: 32 });
    expect(logSchema.parse(undefined)).toEqual({ level: 'info', format: 'auto' });
    expect(providersSchema.parse(undefined)).toBeUndefined();
  });

  it('the whole schema is exactly the slices (and the process keys), nothing defined twice', () => {
    const top = Object.keys(unwrap(configSchema)._zod.def.shape);
    const own = ['redisUrl', 'databaseUrl', 'databasePoolSize', 'dataDir', 'channels', 'shutdownTimeoutMs'];
    expect(top.filter((k) => !own.includes(k)).sort()).toEqual(Object.keys(slices).sort());
    for (const [key, schema] of Object.entries(slices)) expect(unwrap(configSchema)._zod.def.shape[key], key).toBe(schema);
  });

  it('enums are built from the constant lists the code uses', () => {
    expect(options(configSchema, 'conversations.queueMode')).toEqual([...QUEUE_MODES]);
    expect(options(configSchema, 'conversations.queueModeByChannel')).toEqual([...QUEUE_MODES]);
    expect(options(configSchema, 'approvals.autonomy')).toEqual([...AUTONOMY_LEVELS]);
    expect(options(configSchema, 'approvals.requesterMay')).toEqual([...SELF_APPROVABLE_TIERS]);
    expect(options(configSchema, 'moat.secrets')).toEqual([...MESSAGE_SECRET_POLICIES]);
    expect(options(configSchema, 'tools.sandbox.mode')).toEqual([...SANDBOX_MODES]);
    expect(options(configSchema, 'tools.sandbox.network')).toEqual([...SANDBOX_NETWORKS]);
    expect(options(configSchema, 'log.level')).toEqual([...LOG_LEVELS]);
    expect(options(configSchema, 'access.*.policy')).toEqual([...ACCESS_POLICIES]);
    expect(options(configSchema, 'webhooks.subscribers.events')).toEqual([...EVENT_TYPES, '*']);
    expect(options(slotSchema, 'api')).toEqual([...PROVIDER_APIS]);
    // So every value of a list is accepted, and a refused one names the list.
    for (const m of QUEUE_MODES) expect(conversationsSchema.parse({ queueMode: m }).queueMode).toBe(m);
    expect(() => loadConfig({ SWITCHBOARD_CONFIG: configFile('conversations:\n  queueMode: folowup\n') })).toThrow(
      `invalid configuration at "conversations.queueMode": "folowup" is not one of ${QUEUE_MODES.join(', ')}: did you mean "followup"?`,
    );
  });

  it('loadConfig throws one ConfigError with every problem: one line each, structured on the error', () => {
    const env = {
      SWITCHBOARD_CONFIG: configFile('tools:\n  sandbox: { mode: bwarp }\nconversations:\n  queueMode: folowup\nhttp:\n  prot: 1\n'),
      SWITCHBOARD_LOG_LEVEL: 'loud',
    };
    let err: unknown;
    try {
      loadConfig(env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems.map((p) => p.path).sort()).toEqual(['conversations.queueMode', 'http.prot', 'log.level', 'tools.sandbox.mode']);
    expect(problems.find((p) => p.path === 'tools.sandbox.mode')).toMatchObject({ env: 'SWITCHBOARD_SANDBOX', suggestion: 'bwrap' });
    expect(problems.find((p) => p.path === 'log.level')).toMatchObject({ env: 'SWITCHBOARD_LOG_LEVEL' });
    expect((err as ConfigError).message.split('\n')).toEqual(problems.map(problemMessage));
    // One problem: the one line it always was.
    expect(() => loadConfig({ SWITCHBOARD_SANDBOX: 'bwarp' })).toThrow(
      /^invalid configuration at "tools\.sandbox\.mode" \(SWITCHBOARD_SANDBOX\): "bwarp" is not one of bwrap, none: did you mean "bwrap"\?$/,
    );
  });

  it('a file with three mistakes in three slices: start and doctor --json report all three at once', () => {
    const env = { SWITCHBOARD_CONFIG: configFile('tools:\n  sandbox: { network: egres }\napprovals:\n  autonomy: trustd\nlog:\n  level: loud\n') };
    const expected = [
      'invalid configuration at "tools.sandbox.network" (SWITCHBOARD_SANDBOX_NETWORK): "egres" is not one of none, egress: did you mean "egress"?',
      'invalid configuration at "approvals.autonomy": "trustd" is not one of strict, supervised, trusted: did you mean "trusted"?',
      'invalid configuration at "log.level" (SWITCHBOARD_LOG_LEVEL): "loud" is not one of fatal, error, warn, info, debug, trace, silent',
    ];
    const start = cli(['start'], env);
    expect(start.code, start.stderr).toBe(2);
    const lines = start.stderr
      .trim()
      .replace(/^switchboard: /, '')
      .split('\n');
    expect([...lines].sort()).toEqual([...expected].sort());

    const doctor = cli(['doctor', '--json'], env);
    expect(doctor.code, doctor.stderr).toBe(1);
    const report = JSON.parse(doctor.stdout);
    expect(report.ok).toBe(false);
    const fails = report.checks.filter((c: { status: string }) => c.status === 'fail');
    expect(fails.map((c: { message: string }) => c.message).sort()).toEqual([...expected].sort());
    expect(fails.map((c: { key: string }) => c.key).sort()).toEqual(['approvals.autonomy', 'log.level', 'tools.sandbox.network']);
  });

  it('the schema, the environment, the store URLs, a slot and a channel wrong at once: one refusal listing all five', () => {
    const env = {
      SWITCHBOARD_CONFIG: configFile(
        [
          'conversations:',
          '  queueMode: folowup',
          'providers:',
          '  - { id: main, api: openai-completions, model: m, baseUrl: "http://127.0.0.1:9/v1", apiKeyEnv: MY_UNSET_KEY }',
          'channels:',
          '  slak: {}',
          '',
        ].join('\n'),
      ),
      SWITCHBOARD_HTTP_PORT: 'eighty',
      REDIS_URL: 'redis://127.0.0.1:6379',
    };
    const keys = ['conversations.queueMode', 'http.port', 'databaseUrl', 'providers.0.apiKeyEnv', 'channels.slak'];
    const start = cli(['start'], env);
    expect(start.code, start.stderr).toBe(2);
    for (const k of keys) expect(start.stderr, k).toContain(`invalid configuration at "${k}"`);
    expect(start.stderr).toContain('(SWITCHBOARD_HTTP_PORT): expected a whole number, got "eighty"');
    expect(start.stderr).toContain('environment variable MY_UNSET_KEY is not set');
    expect(start.stderr).toContain('(DATABASE_URL): REDIS_URL is set, so DATABASE_URL must be too');
    expect(start.stderr.trim().split('\n')).toHaveLength(5);

    const doctor = cli(['doctor', '--json'], env);
    const report = JSON.parse(doctor.stdout);
    const fails = report.checks.filter((c: { status: string }) => c.status === 'fail');
    expect(fails.map((c: { key: string }) => c.key).sort()).toEqual([...keys].sort());
    expect(fails.find((c: { key: string }) => c.key === 'channels.slak')).toMatchObject({ name: 'channel slak', suggestion: 'slack' });
    expect(fails.find((c: { key: string }) => c.key === 'providers.0.apiKeyEnv')).toMatchObject({ name: 'provider' });
    expect(fails.find((c: { key: string }) => c.key === 'databaseUrl')).toMatchObject({ name: 'mode', env: 'DATABASE_URL' });
  });

  it('the README documents every configuration key', () => {
    const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8');
    // Documented: a key in one of the README's YAML examples, or a dotted key in backticks.
    const documented = new Set<string>();
    const walk = (v: unknown, prefix: string[]): void => {
      if (Array.isArray(v)) {
        for (const x of v) walk(x, prefix);
        return;
      }
      if (!v || typeof v !== 'object') return;
      for (const [k, x] of Object.entries(v)) {
        documented.add([...prefix, k].join('.'));
        walk(x, [...prefix, k]);
      }
    };
    for (const m of readme.matchAll(/```ya?ml\n([\s\S]*?)```/g))
      for (const doc of parseAllDocuments(m[1]!)) if (!('errors' in doc && doc.errors.length)) walk(doc.toJS(), []);
    for (const m of readme.matchAll(/`([a-zA-Z]+(?:\.[a-zA-Z*<>]+)+)`/g)) documented.add(m[1]!.replace(/<[^>]+>/g, '*'));
    const matches = (key: string) =>
      [...documented].some(
        (d) =>
          d.split('.').length === key.split('.').length && key.split('.').every((seg, i) => seg === '*' || d.split('.')[i] === '*' || seg === d.split('.')[i]),
      );
    const missing = keyPaths(configSchema).filter((k) => !matches(k));
    expect(missing).toEqual([]);
  });
});
