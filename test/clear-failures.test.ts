/**
 * Failures as a user sees them through the CLI (issue #22): one line on stderr without a stack
 * trace (unless --debug), the documented exit codes (2 configuration, 1 runtime), and Redis trouble
 * logged with the server it concerns instead of nothing at all.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../kernel/paths.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';

const BIN = join(packageRoot, 'bin', 'switchboard.js');
const ADMIN_URL = process.env.SWITCHBOARD_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dirs: string[] = [];
const children: ChildProcess[] = [];

function baseEnv(env: Record<string, string>): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-fail-'));
  dirs.push(dir);
  return { PATH: process.env.PATH ?? '', SWITCHBOARD_DATA: dir, SWITCHBOARD_HTTP_PORT: '0', ...env };
}

function cli(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: baseEnv(env), encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A database name the local server does not have. */
function missingDbUrl(): { url: string; name: string } {
  const name = `sb_missing_${randomBytes(5).toString('hex')}`;
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return { url: u.toString(), name };
}

async function dropDatabase(name: string): Promise<void> {
  const a = new pg.Client({ connectionString: ADMIN_URL });
  await a.connect();
  await a.query(`drop database if exists ${name} with (force)`);
  await a.end();
}

const STACK_LINE = /^\s+at /m;

describe('clear failures through the CLI', () => {
  let pgdb: TestDatabase;
  const created: string[] = [];
  beforeAll(async () => {
    pgdb = await createTestDatabase();
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const name of created) await dropDatabase(name);
    await pgdb?.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('Postgres unreachable at start: exit 1, one line naming the masked URL, no stack', () => {
    const r = cli(['worker'], { DATABASE_URL: 'postgres://app:hunter2@127.0.0.1:1/app', REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe('switchboard: cannot reach Postgres at postgres://app:****@127.0.0.1:1/app (DATABASE_URL): ECONNREFUSED');
    expect(r.stderr).not.toMatch(STACK_LINE);
    expect(r.stderr + r.stdout).not.toContain('hunter2');
  });

  it('--debug (or SWITCHBOARD_DEBUG=1) shows the stack', () => {
    const r = cli(['worker', '--debug'], { DATABASE_URL: 'postgres://app:hunter2@127.0.0.1:1/app', REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cannot reach Postgres');
    expect(r.stderr).toMatch(STACK_LINE);
    const e = cli(['migrate'], { DATABASE_URL: 'postgres://app@127.0.0.1:1/app', SWITCHBOARD_DEBUG: '1' });
    expect(e.code).toBe(1);
    expect(e.stderr).toMatch(STACK_LINE);
  });

  it('a missing database: exit 2, the message names it and how to create it; migrate --create does', async () => {
    const { url, name } = missingDbUrl();
    const r = cli(['migrate'], { DATABASE_URL: url });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`database "${name}" does not exist`);
    expect(r.stderr).toContain(`createdb`);
    expect(r.stderr).not.toMatch(STACK_LINE);
    // start (ingress, worker) says the same
    const w = cli(['worker'], { DATABASE_URL: url, REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(w.code).toBe(2);
    expect(w.stderr).toContain(`database "${name}" does not exist`);

    created.push(name);
    const c = cli(['migrate', '--create', '--json'], { DATABASE_URL: url });
    expect(c.stderr).toBe('');
    expect(c.code).toBe(0);
    expect(JSON.parse(c.stdout).applied).toContain('001_core.sql');
  });

  it('a worker with Redis unreachable logs a warning naming it within a few seconds', async () => {
    const child = spawn(process.execPath, [BIN, 'worker'], {
      env: baseEnv({ DATABASE_URL: pgdb.url, REDIS_URL: 'redis://:s3cret@127.0.0.1:1' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const deadline = Date.now() + 15_000;
    type Line = { level: number; msg: string; redis?: string; url?: string };
    let warning: Line | undefined;
    while (!warning && Date.now() < deadline && child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 100));
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const j = JSON.parse(line) as Line;
        if (j.redis) warning = j;
      }
    }
    child.kill('SIGKILL');
    expect(warning, out).toBeDefined();
    expect(warning!.level).toBe(40);
    expect(warning!.msg).toContain('cannot reach Redis at 127.0.0.1:1');
    expect(warning!.redis).toBe('127.0.0.1:1');
    expect(warning!.url).toBe('redis://:****@127.0.0.1:1');
    expect(out).not.toContain('s3cret');
    // Rate-limited: one warning, not one per retry.
    expect(out.split('\n').filter((l) => l.includes('"component":"redis"'))).toHaveLength(1);
  }, 30_000);
});
