/** The operator CLI as a user runs it: `switchboard <command>`, exit codes and --json output. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../kernel/paths.js';
import { ConfigError, loadConfig, maskConfig } from '../src/config.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), ...args], {
    env: { PATH: process.env.PATH ?? '', SWITCHBOARD_DATA: mkdtempSync(join(tmpdir(), 'sb-cli-')), ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('switchboard CLI', () => {
  let pgdb: TestDatabase;
  beforeAll(async () => {
    pgdb = await createTestDatabase();
  });
  afterAll(() => pgdb?.drop());

  it('doctor --json reports the missing provider, masks secrets, and exits 1', () => {
    const r = cli(['doctor', '--json'], { SWITCHBOARD_API_KEYS: 'sk-very-secret-key-123' });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.mode).toBe('embedded');
    expect(report.provider.configured).toBe(false);
    expect(report.checks.find((c: { name: string }) => c.name === 'provider')).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/no model provider is configured/),
    });
    expect(r.stdout).not.toContain('sk-very-secret-key-123');
  });

  it('doctor shows the provider and the Postgres connection, and exits 0 when all is well', () => {
    const r = cli(['doctor', '--json'], {
      OPENAI_API_KEY: 'sk-openai-secret-999999',
      SWITCHBOARD_API_KEYS: 'sk-very-secret-key-123',
      DATABASE_URL: pgdb.url.replace('postgres@', 'postgres:hunter2@'),
    });
    expect(r.stdout).not.toContain('sk-openai-secret-999999');
    expect(r.stdout).not.toContain('hunter2');
    const report = JSON.parse(r.stdout);
    expect(report.provider.slots[0]).toMatchObject({ id: 'openai', api: 'openai-responses', keyPresent: true, keyEnv: 'OPENAI_API_KEY' });
    expect(report.checks.find((c: { name: string }) => c.name === 'postgres').status).toBe('ok');
    expect(r.code).toBe(0);
    const human = cli(['doctor'], { OPENAI_API_KEY: 'sk-openai-secret-999999' });
    expect(human.stdout).toMatch(/\[ok {2}\] provider: openai/);
    expect(human.stdout).not.toContain('sk-openai-secret-999999');
  });

  it('audit verify on an embedded folder with no database yet: an empty, intact ledger, and nothing created', () => {
    const data = join(mkdtempSync(join(tmpdir(), 'sb-cli-')), 'data');
    const r = cli(['audit', 'verify', '--json'], { SWITCHBOARD_DATA: data });
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, rows: 0, head: null });
    expect(r.code).toBe(0);
    const head = cli(['audit', 'verify', '--head', 'abc'], { SWITCHBOARD_DATA: data });
    expect(head.stdout).toMatch(/BROKEN: the head abc is not in the chain/);
    expect(head.code).toBe(1);
    expect(cli(['audit', 'export'], { SWITCHBOARD_DATA: data })).toMatchObject({ code: 0, stdout: '' });
    expect(existsSync(data)).toBe(false);
  });

  it('migrate applies the schema once', () => {
    const first = cli(['migrate', '--json'], { DATABASE_URL: pgdb.url });
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).applied).toContain('001_core.sql');
    const second = cli(['migrate', '--json'], { DATABASE_URL: pgdb.url });
    expect(JSON.parse(second.stdout).applied).toEqual([]);
  });

  it('rejects bad configuration at start with the key named, exit 2', () => {
    const port = cli(['start'], { SWITCHBOARD_HTTP_PORT: 'eighty' });
    expect(port.code).toBe(2);
    expect(port.stderr).toMatch(/SWITCHBOARD_HTTP_PORT/);
    const dir = mkdtempSync(join(tmpdir(), 'sb-cfg-'));
    const file = join(dir, 'switchboard.yaml');
    writeFileSync(file, 'http:\n  port: 8787\n  prot: 1\n');
    const unknown = cli(['start'], { SWITCHBOARD_CONFIG: file });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/http/);
    expect(unknown.stderr).toMatch(/prot/);
    const split = cli(['worker']);
    expect(split.code).toBe(2);
    expect(split.stderr).toMatch(/REDIS_URL/);
  });

  it('prints usage for an unknown command, exit 2', () => {
    const r = cli(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown command: frobnicate/);
  });
});

describe('configuration', () => {
  it('reads YAML or JSON files, with the environment taking precedence', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-cfg-'));
    const file = join(dir, 'c.json');
    writeFileSync(
      file,
      JSON.stringify({ http: { port: 9000, host: '0.0.0.0' }, agents: { default: { maxIterations: 5 }, support: { description: 'Support desk' } } }),
    );
    const cfg = loadConfig({ SWITCHBOARD_CONFIG: file, SWITCHBOARD_HTTP_PORT: '9100' });
    expect(cfg.http).toMatchObject({ port: 9100, host: '0.0.0.0' });
    expect(cfg.agents.default!.maxIterations).toBe(5);
    expect(cfg.agents.support!.maxIterations).toBe(90);
    expect(cfg.agents.default!.historyLimit).toBe(200);
  });

  it('defaults match the README', () => {
    const cfg = loadConfig({});
    expect(cfg.http).toMatchObject({ port: 8787, host: '127.0.0.1', apiKeys: [], openAccess: false });
    expect(cfg.dataDir).toBe('./data');
    expect(cfg.agents.default!.maxIterations).toBe(90);
    expect(cfg.databasePoolSize).toBe(10);
    expect(loadConfig({ SWITCHBOARD_DB_POOL_SIZE: '4' }).databasePoolSize).toBe(4);
  });

  it('names the bad key', () => {
    expect(() => loadConfig({ SWITCHBOARD_API_KEYS: 'short' })).toThrow(/http\.apiKeys.*SWITCHBOARD_API_KEYS/);
    expect(() => loadConfig({ REDIS_URL: 'not a url' })).toThrow(ConfigError);
    expect(() => loadConfig({ REDIS_URL: 'not a url' })).toThrow(/redisUrl.*REDIS_URL/);
    expect(() => loadConfig({ SWITCHBOARD_DB_POOL_SIZE: '0' })).toThrow(/databasePoolSize.*SWITCHBOARD_DB_POOL_SIZE/);
  });

  it('masks secrets for display', () => {
    const cfg = loadConfig({ ANTHROPIC_API_KEY: 'sk-ant-abcdefghijklmnop', DATABASE_URL: 'postgres://u:pw@h/db' });
    const text = JSON.stringify(maskConfig(cfg));
    expect(text).not.toContain('abcdefghijklmnop');
    expect(text).not.toContain(':pw@');
    expect(text).toContain('postgres://u:****@h/db');
  });
});
