/**
 * Issue #22: doctor validates exactly what start validates. Through the CLI as a user runs it:
 * each bad configuration is a failing doctor check naming the key (and its variable, and a
 * "did you mean"), `doctor --json` prints JSON with ok:false, and `start` refuses it too (exit 2).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../kernel/paths.js';

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  key?: string;
  env?: string;
  suggestion?: string;
}

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), ...args], {
    env: { PATH: process.env.PATH ?? '', SWITCHBOARD_DATA: mkdtempSync(join(tmpdir(), 'sb-doc-')), SWITCHBOARD_HTTP_PORT: '0', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function configFile(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'sb-doc-cfg-')), 'switchboard.yaml');
  writeFileSync(file, yaml);
  return file;
}

/** doctor --json on the configuration: exit 1, JSON on stdout, the failing checks. */
function doctorFails(env: Record<string, string>): {
  report: { ok: boolean; checks: Check[]; mode: string; provider: unknown; slots: unknown[] };
  fails: Check[];
} {
  const r = cli(['doctor', '--json'], env);
  expect(r.code, r.stderr).toBe(1);
  const report = JSON.parse(r.stdout);
  expect(report.ok).toBe(false);
  for (const k of ['mode', 'config', 'provider', 'slots', 'checks', 'ok']) expect(report).toHaveProperty(k);
  return { report, fails: (report.checks as Check[]).filter((c) => c.status === 'fail') };
}

function startRefuses(env: Record<string, string>, pattern: RegExp): void {
  const r = cli(['start'], env);
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toMatch(pattern);
}

describe('doctor validates what start validates (issue #22)', () => {
  it('a typo in the Slack mode: did you mean socket; start refuses too', () => {
    const env = { SWITCHBOARD_CONFIG: configFile('channels:\n  slack:\n    mode: sockt\n'), SLACK_BOT_TOKEN: 'xoxb-123456789' };
    const { fails } = doctorFails(env);
    const c = fails.find((x) => x.key === 'channels.slack.mode');
    expect(c, JSON.stringify(fails)).toBeDefined();
    expect(c!.message).toMatch(/did you mean "socket"/);
    expect(c!.suggestion).toBe('socket');
    startRefuses(env, /channels\.slack\.mode/);
  });

  it('an unknown channel name: did you mean; start refuses too', () => {
    const env = { SWITCHBOARD_CONFIG: configFile('channels:\n  slak:\n    mode: socket\n') };
    const { fails } = doctorFails(env);
    const c = fails.find((x) => x.key === 'channels.slak');
    expect(c, JSON.stringify(fails)).toBeDefined();
    expect(c!.message).toMatch(/unknown channel/);
    expect(c!.message).toMatch(/did you mean "slack"/);
    startRefuses(env, /channels\.slak/);
  });

  it('a missing bot token variable is named; start refuses too', () => {
    const env = { SWITCHBOARD_CONFIG: configFile('channels:\n  slack:\n    mode: socket\n    botTokenEnv: MY_SLACK_BOT\n') };
    const { fails } = doctorFails(env);
    const c = fails.find((x) => x.key === 'channels.slack.botTokenEnv');
    expect(c, JSON.stringify(fails)).toBeDefined();
    expect(c!.env).toBe('MY_SLACK_BOT');
    expect(c!.message).toMatch(/MY_SLACK_BOT/);
    startRefuses(env, /MY_SLACK_BOT/);
  });

  it('SMS without publicUrl; start refuses too', () => {
    const env = {
      SWITCHBOARD_CONFIG: configFile('channels:\n  sms:\n    accountSid: AC0123456789abcdef0123456789abcdef\n'),
      TWILIO_AUTH_TOKEN: 'twilio-auth-token-123456',
    };
    const { fails } = doctorFails(env);
    const c = fails.find((x) => x.key === 'channels.sms.publicUrl');
    expect(c, JSON.stringify(fails)).toBeDefined();
    startRefuses(env, /channels\.sms\.publicUrl/);
  });

  it('two problems at once are both reported, in the schema and across channels', () => {
    const env = {
      SWITCHBOARD_CONFIG: configFile('http:\n  prot: 1\nmoat:\n  secrets: redcat\nchannels:\n  slack:\n    mode: sockt\n  discrod: {}\n'),
      SLACK_BOT_TOKEN: 'xoxb-123456789',
    };
    const { fails } = doctorFails(env);
    const schema = fails.filter((x) => x.name === 'config').map((x) => x.key);
    expect(schema).toEqual(expect.arrayContaining(['http.prot', 'moat.secrets']));
    expect(fails.find((x) => x.key === 'http.prot')!.message).toMatch(/did you mean "port"/);
    expect(fails.find((x) => x.key === 'moat.secrets')!.message).toMatch(/did you mean "redact"/);
    startRefuses(env, /http\.prot/);
    // With the schema fixed, both channel problems at once.
    const env2 = { ...env, SWITCHBOARD_CONFIG: configFile('channels:\n  slack:\n    mode: sockt\n  discrod: {}\n') };
    const { fails: fails2 } = doctorFails(env2);
    expect(fails2.map((x) => x.key)).toEqual(expect.arrayContaining(['channels.slack.mode', 'channels.discrod']));
    expect(fails2.find((x) => x.key === 'channels.discrod')!.message).toMatch(/did you mean "discord"/);
    startRefuses(env2, /channels\.(slack\.mode|discrod)/);
  });

  it('slot references and the operator channel are checked like start checks them', () => {
    const env = {
      SWITCHBOARD_CONFIG: configFile(
        [
          'providers:',
          '  - id: main',
          '    api: openai-completions',
          '    model: some-model',
          '    baseUrl: http://127.0.0.1:9/v1',
          '    apiKeyEnv: MY_OPENAI_KEY',
          'compaction:',
          '  summarizerSlot: mian',
          'approvals:',
          '  operatorChannel: { channel: slack, target: C123 }',
          '',
        ].join('\n'),
      ),
      MY_OPENAI_KEY: 'sk-local-key-1234567890',
    };
    const { fails } = doctorFails(env);
    expect(fails.find((x) => x.key === 'compaction.summarizerSlot')?.message).toMatch(/did you mean "main"/);
    expect(fails.find((x) => x.key === 'approvals.operatorChannel.channel')?.message).toMatch(/not a configured channel/);
    startRefuses(env, /compaction\.summarizerSlot/);
  });

  it('--json on an unreadable configuration still prints JSON with ok:false', () => {
    const env = { SWITCHBOARD_CONFIG: configFile('http: [1, 2\n') };
    const { fails } = doctorFails(env);
    expect(fails.length).toBeGreaterThan(0);
    startRefuses(env, /SWITCHBOARD_CONFIG/);
  });

  it('the masked configuration shows variable names and enum values, and masks key values', () => {
    const r = cli(['doctor', '--json'], {
      SWITCHBOARD_CONFIG: configFile(
        [
          'providers:',
          '  - id: main',
          '    api: openai-completions',
          '    model: some-model',
          '    baseUrl: http://127.0.0.1:9/v1',
          '    apiKeyEnv: MY_OPENAI_KEY',
          'channels:',
          '  slack:',
          '    mode: socket',
          '    botTokenEnv: MY_SLACK_BOT',
          'webhooks:',
          '  subscribers:',
          '    - { id: ops, url: "https://hooks.example.com/x", secretEnv: OPS_HOOK_SECRET, events: ["*"] }',
          '',
        ].join('\n'),
      ),
      MY_OPENAI_KEY: 'sk-local-key-1234567890',
      MY_SLACK_BOT: 'xoxb-slack-secret-token-1',
      SWITCHBOARD_API_KEYS: 'sk-very-secret-key-123',
    });
    const report = JSON.parse(r.stdout);
    const cfg = report.config;
    expect(cfg.providers[0].apiKeyEnv).toBe('MY_OPENAI_KEY');
    expect(cfg.channels.slack.mode).toBe('socket');
    expect(cfg.channels.slack.botTokenEnv).toBe('MY_SLACK_BOT');
    expect(cfg.webhooks.subscribers[0].secretEnv).toBe('OPS_HOOK_SECRET');
    expect(cfg.moat.secrets).toBe('redact');
    expect(cfg.http.apiKeys[0]).not.toBe('sk-very-secret-key-123');
    expect(r.stdout).not.toContain('sk-very-secret-key-123');
    expect(r.stdout).not.toContain('sk-local-key-1234567890');
    expect(r.stdout).not.toContain('xoxb-slack-secret-token-1');
    expect(report.checks.find((c: Check) => c.name === 'channels')).toMatchObject({ status: 'ok', message: expect.stringMatching(/slack/) });
  });
});
