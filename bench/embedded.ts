/**
 * The embedded default (`switchboard start` with no REDIS_URL / DATABASE_URL: in-process queue and
 * PGlite) beside the all-in-one on Redis + Postgres, in the same run, with issue #24's targets printed
 * beside each figure: start to ready on a fresh data folder, resident memory idle and after a load
 * of --turns turns at --c against the fake LLM, and turns per second. Asserts nothing.
 *
 *   npm run build && node dist/bench/embedded.js [--turns 1000] [--c 64] [--warmup 300] [--idle-ms 3000] [--skip-postgres]
 *
 * Start to ready is wall time from spawn to the "listening" line, so it grows on a busy machine: the
 * process's own CPU time to ready is printed beside it. Needs redis-server on PATH and a local
 * PostgreSQL (SWITCHBOARD_TEST_PG) unless --skip-postgres.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { packageRoot } from '../kernel/paths.js';
import { pct } from '../test/support/load.js';
import { createTestDatabase } from '../test/support/postgres.js';
import { TestRedis } from '../test/support/redis.js';
import { cpuMs, rssMb } from './support.js';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '1000' },
    c: { type: 'string', default: '64' },
    warmup: { type: 'string', default: '300' },
    'idle-ms': { type: 'string', default: '3000' },
    'skip-postgres': { type: 'boolean', default: false },
  },
});
const TURNS = Number(values.turns);
const C = Number(values.c);
const KEY = 'sk-bench-embedded-0001';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Proc {
  proc: ChildProcess;
  url?: string;
  readyMs: number;
  readyCpuMs: number;
}

function start(args: string[], env: Record<string, string>, ready: RegExp): Promise<Proc> {
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const t0 = performance.now();
  const proc = spawn(process.execPath, [...nodeArgs, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const tail: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not start in 120 s:\n${tail.join('\n')}`)), 120_000);
    for (const s of [proc.stdout!, proc.stderr!])
      createInterface({ input: s }).on('line', (line) => {
        tail.push(line);
        if (tail.length > 20) tail.shift();
        if (!ready.test(line)) return;
        const readyMs = performance.now() - t0;
        let url: string | undefined;
        try {
          url = (JSON.parse(line) as { url?: string }).url;
        } catch {
          /* not JSON */
        }
        clearTimeout(timer);
        resolve({ proc, readyMs, readyCpuMs: cpuMs(proc.pid!), ...(url ? { url } : {}) });
      });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}:\n${tail.join('\n')}`));
    });
  });
}

function stop(p: Proc): Promise<void> {
  if (p.proc.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    p.proc.once('exit', () => resolve());
    p.proc.kill('SIGTERM');
  });
}

/** n one-off turns (plain JSON answers), c at a time; latencies in ms. */
async function load(url: string, n: number, c: number, tag: string): Promise<{ perSec: number; p50: number; p99: number; errors: number }> {
  const lat: number[] = [];
  const kinds = new Map<string, number>();
  let errors = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (;;) {
        const i = next++;
        if (i >= n) return;
        const t = performance.now();
        try {
          const res = await fetch(`${url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: `hello ${tag} ${i}` }] }),
            signal: AbortSignal.timeout(120_000),
          });
          const body = (await res.json()) as { choices?: unknown[] };
          if (!res.ok || !body.choices?.length) {
            errors++;
            kinds.set(`HTTP ${res.status}`, (kinds.get(`HTTP ${res.status}`) ?? 0) + 1);
          }
        } catch (err) {
          errors++;
          kinds.set((err as Error).name, (kinds.get((err as Error).name) ?? 0) + 1);
        }
        lat.push(performance.now() - t);
      }
    }),
  );
  if (kinds.size) console.log(`${tag}: errors ${[...kinds].map(([k, v]) => `${k} × ${v}`).join(', ')}`);
  return { perSec: (n / (performance.now() - t0)) * 1000, p50: pct(lat, 50), p99: pct(lat, 99), errors };
}

interface Figures {
  startMs: number;
  startCpuMs: number;
  restartMs?: number;
  restartCpuMs?: number;
  idleMb: number;
  loadedMb: number;
  perSec: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measure(label: string, env: Record<string, string>, restart: boolean): Promise<Figures> {
  const bin = join(packageRoot, 'bin/switchboard.js');
  const ready = /switchboard is listening/;
  let p = await start([bin, 'start'], env, ready);
  const startMs = p.readyMs;
  const startCpuMs = p.readyCpuMs;
  let restartMs: number | undefined;
  let restartCpuMs: number | undefined;
  if (restart) {
    // The same folder again: what every later start costs.
    await stop(p);
    p = await start([bin, 'start'], env, ready);
    restartMs = p.readyMs;
    restartCpuMs = p.readyCpuMs;
  }
  try {
    await sleep(Number(values['idle-ms']));
    const idleMb = rssMb(p.proc.pid!);
    await load(p.url!, Number(values.warmup), C, `${label}-warm`);
    const r = await load(p.url!, TURNS, C, label);
    await sleep(1000);
    const loadedMb = rssMb(p.proc.pid!);
    return { startMs, startCpuMs, ...(restartMs !== undefined ? { restartMs, restartCpuMs } : {}), idleMb, loadedMb, ...r };
  } finally {
    await stop(p);
  }
}

function mark(ok: boolean): string {
  return ok ? 'met' : 'MISSED';
}

async function main(): Promise<void> {
  const fake = await start([join(packageRoot, 'dist/test/fakes/fake-llm.js'), '--port', '0', '--tokens', '20'], {}, /"url"/);
  const base: Record<string, string> = {
    SWITCHBOARD_API_KEYS: KEY,
    OPENAI_BASE_URL: `${fake.url}/v1`,
    OPENAI_API_KEY: 'fake',
    SWITCHBOARD_MODEL: 'fake-model',
    SWITCHBOARD_HTTP_PORT: '0',
    SWITCHBOARD_LOG_LEVEL: 'info',
    SWITCHBOARD_WORKER_CONCURRENCY: String(C),
    SWITCHBOARD_HTTP_RATE_LIMIT: 'off',
    SWITCHBOARD_MAX_TURNS_PER_KEY: '0',
  };
  console.log(`fake LLM at ${fake.url}, 20 tokens per reply; ${TURNS} turns at c=${C} after ${values.warmup} unmeasured\n`);
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-bench-embedded-'));
  try {
    const emb = await measure('embedded', { ...base, SWITCHBOARD_DATA: dataDir }, true);
    let pg: Figures | undefined;
    if (!values['skip-postgres']) {
      const redis = await TestRedis.start();
      const db = await createTestDatabase();
      const pgData = mkdtempSync(join(tmpdir(), 'sb-bench-allinone-'));
      try {
        pg = await measure(
          'all-in-one',
          { ...base, REDIS_URL: redis.url, DATABASE_URL: db.url, SWITCHBOARD_DATA: pgData, SWITCHBOARD_DB_POOL_SIZE: '4' },
          false,
        );
      } finally {
        await redis.stop();
        await db.drop().catch(() => {});
        rmSync(pgData, { recursive: true, force: true });
      }
    }
    const f0 = (x: number) => x.toFixed(0);
    console.log('| | embedded (PGlite) | all-in-one (Redis + Postgres) | target (embedded) | |');
    console.log('|---|---|---|---|---|');
    console.log(
      `| start to ready, fresh data folder | ${f0(emb.startMs)} ms (CPU ${f0(emb.startCpuMs)} ms) | ${pg ? `${f0(pg.startMs)} ms (CPU ${f0(pg.startCpuMs)} ms)` : '-'} | ≤ 3000 ms | ${mark(emb.startMs <= 3000)} |`,
    );
    console.log(`| start to ready, same folder again | ${f0(emb.restartMs!)} ms (CPU ${f0(emb.restartCpuMs!)} ms) | - | - | |`);
    console.log(`| RSS idle | ${emb.idleMb} MB | ${pg ? `${pg.idleMb} MB` : '-'} | ≤ 200 MB | ${mark(emb.idleMb <= 200)} |`);
    console.log(`| RSS after load | ${emb.loadedMb} MB | ${pg ? `${pg.loadedMb} MB` : '-'} | ≤ 300 MB | ${mark(emb.loadedMb <= 300)} |`);
    const ratio = pg ? emb.perSec / pg.perSec : NaN;
    console.log(
      `| turns/s at c=${C} | ${f0(emb.perSec)} | ${pg ? f0(pg.perSec) : '-'} | ≥ 0.5 × all-in-one | ${pg ? `${ratio.toFixed(2)}×, ${mark(ratio >= 0.5)}` : ''} |`,
    );
    console.log(`| turn latency p50 / p99 | ${f0(emb.p50)} / ${f0(emb.p99)} ms | ${pg ? `${f0(pg.p50)} / ${f0(pg.p99)} ms` : '-'} | - | |`);
    if (emb.errors || pg?.errors) console.log(`\nerrors: embedded ${emb.errors}, all-in-one ${pg?.errors ?? 0}`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await stop(fake);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
