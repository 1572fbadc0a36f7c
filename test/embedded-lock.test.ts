/**
 * Issue #22: the embedded data folder (PGlite, no DATABASE_URL) belongs to one process, and the HTTP
 * port is bound before anything else starts. Driven through the CLI as a user runs it
 * (`node bin/switchboard.js start`), against the build in dist/ (`npm run build` first).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../kernel/paths.js';
import { API_KEY, GatewayProcess } from './support/gateway.js';
import { freePort } from './support/redis.js';

const procs: GatewayProcess[] = [];
const dirs: string[] = [];

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'sb-lock-'));
  dirs.push(d);
  return d;
}

function env(data: string, port: number): Record<string, string> {
  return { SWITCHBOARD_DATA: data, SWITCHBOARD_HTTP_PORT: String(port), SWITCHBOARD_API_KEYS: API_KEY, SWITCHBOARD_SANDBOX: 'none' };
}

async function startGw(data: string, port: number): Promise<GatewayProcess> {
  const gp = await GatewayProcess.spawn('start', env(data, port));
  procs.push(gp);
  return gp;
}

/** A `start` expected to refuse: its exit code and everything it printed. */
function refusedStart(data: string, port: number): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'start'], {
      env: { PATH: process.env.PATH ?? '', SWITCHBOARD_LOG_LEVEL: 'debug', ...env(data, port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.stderr.on('data', (b: Buffer) => (err += b.toString()));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`the second start did not exit in time\n${out}\n${err}`));
    }, 20_000);
    p.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

/** The pid of a process that has exited. */
function deadPid(): Promise<number> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    p.once('exit', () => resolve(p.pid!));
  });
}

async function serves(gw: GatewayProcess): Promise<void> {
  expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'x-switchboard-conversation': 'lock-check' },
    body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'hello' }] }),
  });
  expect(r.status).toBe(200);
}

afterEach(async () => {
  for (const p of procs.splice(0)) await p.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('embedded data folder lock (switchboard start)', () => {
  it('refuses a second start on the same data folder, naming the holder; the first keeps serving', async () => {
    const data = dataDir();
    const first = await startGw(data, await freePort());
    const lock = JSON.parse(readFileSync(join(data, 'switchboard.lock'), 'utf8')) as { pid: number; url: string };
    expect(lock.pid).toBe(first.proc.pid);
    expect(lock.url).toBe(first.url);

    const second = await refusedStart(data, await freePort());
    expect(second.code).toBe(2);
    const message = second.err.trim();
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain(`pid ${first.proc.pid}`);
    expect(message).toContain(first.url!);
    expect(message).toContain(data);
    expect(second.err + second.out).not.toMatch(/worker started|switchboard is listening|\n\s+at /);

    await serves(first);
    expect(JSON.parse(readFileSync(join(data, 'switchboard.lock'), 'utf8')).pid).toBe(first.proc.pid);
  }, 60_000);

  it('takes over a stale lock whose process is gone, and says so', async () => {
    const data = dataDir();
    const pid = await deadPid();
    writeFileSync(join(data, 'switchboard.lock'), JSON.stringify({ pid, command: 'start', url: 'http://127.0.0.1:1', startedAt: '2020-01-01T00:00:00.000Z' }));
    const gw = await startGw(data, await freePort());
    expect(gw.logs.some((l) => l.includes('took over the lock') && l.includes(`"stalePid":${pid}`))).toBe(true);
    expect(JSON.parse(readFileSync(join(data, 'switchboard.lock'), 'utf8')).pid).toBe(gw.proc.pid);
    await serves(gw);
  }, 60_000);

  it('refuses a port in use in one line, exit 2, before it opens the store or a worker', async () => {
    const port = await freePort();
    const first = await startGw(dataDir(), port);
    const other = dataDir();
    const second = await refusedStart(other, port);
    expect(second.code).toBe(2);
    expect(second.err.trim()).toBe(`switchboard: port ${port} on 127.0.0.1 is in use (SWITCHBOARD_HTTP_PORT)`);
    expect(second.err + second.out).not.toMatch(/EADDRINUSE|worker started|\n\s+at /);
    // Nothing was opened on the other folder, and its lock was released.
    expect(existsSync(join(other, 'pglite'))).toBe(false);
    expect(existsSync(join(other, 'switchboard.lock'))).toBe(false);
    await serves(first);
  }, 60_000);

  it('releases the lock on a clean exit, so a new start works', async () => {
    const data = dataDir();
    const first = await startGw(data, await freePort());
    expect(await first.kill('SIGTERM')).toBe(0);
    expect(existsSync(join(data, 'switchboard.lock'))).toBe(false);
    const again = await startGw(data, await freePort());
    expect(JSON.parse(readFileSync(join(data, 'switchboard.lock'), 'utf8')).pid).toBe(again.proc.pid);
    await serves(again);
  }, 60_000);
});
