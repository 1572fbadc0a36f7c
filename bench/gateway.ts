/**
 * Gateway latency and throughput, beside the floor (the same requests sent
 * straight to the fake LLM). Prints figures; asserts nothing.
 *
 *   npm run build && node dist/bench/gateway.js [--levels 1,8,32,64] [--requests 400] [--tokens 20] [--topology split,all] [--workers 2] [--warmup 3000] [--per-connection 20] [--detail]
 *                                           [--token-delay-ms 0] [--worker-concurrency 64]
 *
 * --workers N (or a list, 1,2,3) sets the split topology's worker processes: 1 ingress + N
 * workers, once per N, to show whether another worker adds throughput on this machine.
 * --token-delay-ms makes the fake LLM wait between tokens (a turn then takes tokens × delay) and
 * --worker-concurrency sets each gateway process's `queue.concurrency`: with both, a worker is
 * bound by its slots rather than by the CPU, and another worker adds its slots' throughput until
 * the cores run out.
 * After each gateway the targets of issue #24 are printed as ratios to the floor of this run
 * (bench/targets.ts): c=64 for throughput, CPU and commands; c=1 for the added time to first token.
 * Each gateway first serves --warmup requests at concurrency 64, unmeasured: a
 * long-running gateway has its hot code optimized by V8, and a cold one spends
 * seconds compiling (a 1,000-request run measured ~20% fewer turns per second).
 * --detail adds Redis commands per turn by command.
 *
 * Needs redis-server on PATH and a local PostgreSQL (SWITCHBOARD_TEST_PG, default
 * postgres://postgres@127.0.0.1:5432/postgres): it makes and drops its own database.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { packageRoot } from '../kernel/paths.js';
import { pct } from '../test/support/load.js';
import { createTestDatabase } from '../test/support/postgres.js';
import { TestRedis } from '../test/support/redis.js';
import { cpuMs, PgCpuSampler, redisCpuMs, rssMb } from './support.js';
import { type TopologyFigures, targetLines } from './targets.js';

const { values } = parseArgs({
  options: {
    levels: { type: 'string', default: '1,8,32,64' },
    requests: { type: 'string', default: '400' },
    tokens: { type: 'string', default: '20' },
    topology: { type: 'string', default: 'split,all' },
    workers: { type: 'string', default: '2' },
    'per-connection': { type: 'string', default: '20' },
    detail: { type: 'boolean', default: false },
    warmup: { type: 'string', default: '3000' },
    'token-delay-ms': { type: 'string', default: '0' },
    'worker-concurrency': { type: 'string', default: '64' },
    'pg-socket': { type: 'string' },
  },
});
const LEVELS = values.levels!.split(',').map(Number);
const REQUESTS = Number(values.requests);
/** Each level sends at least this many requests per connection (fewer: a shorter, noisier run). */
const PER_CONNECTION = Number(values['per-connection']);
const KEY = 'sk-bench-key-0001';

/** The same database through the Unix socket in `dir` (pg reads the socket directory from `host`). */
function overSocket(url: string, dir: string): string {
  const u = new URL(url);
  return `postgres://${u.username}@/${u.pathname.slice(1)}?host=${encodeURIComponent(dir)}`;
}

interface Proc {
  name: string;
  proc: ChildProcess;
  url?: string;
}

function startProc(name: string, args: string[], env: Record<string, string>, ready: RegExp): Promise<Proc> {
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") goes to every gateway process.
  const nodeArgs = name === 'fake-llm' ? [] : (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(process.execPath, [...nodeArgs, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const p: Proc = { name, proc };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start`)), 120_000);
    // The last lines a process wrote, for the error when it exits before it is ready.
    const last: string[] = [];
    for (const s of [proc.stdout!, proc.stderr!])
      createInterface({ input: s }).on('line', (line) => {
        if (last.push(line) > 5) last.shift();
        if (!ready.test(line)) return;
        try {
          p.url = (JSON.parse(line) as { url?: string }).url;
        } catch {
          /* not JSON */
        }
        clearTimeout(timer);
        resolve(p);
      });
    proc.once('exit', (code) => reject(new Error(`${name} exited with ${code}${last.length ? `:\n${last.join('\n')}` : ''}`)));
  });
}

const pgSampler = new PgCpuSampler();

/**
 * What Redis and Postgres have done so far: CPU ms, Redis commands (by name), and Postgres's
 * transaction ids given out. Every transaction that writes gets one (each such commit is a
 * synchronous one: a WAL flush), a read gets none, and the count is exact at once, where
 * pg_stat_database's counters are flushed by each backend at most once a second (a short level
 * read 1.4 for 2.0). The ids are the cluster's: run the bench where nothing else writes to it.
 */
async function serviceCounters(
  redis: Redis,
  db: pg.Client,
): Promise<{ redisCpu: number; redisCalls: number; redisByCommand: Map<string, number>; pgCpu: number; pgXacts: number }> {
  const redisCpu = await redisCpuMs(redis);
  const stats = await redis.info('commandstats');
  const redisByCommand = new Map([...stats.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
  const redisCalls = [...redisByCommand.values()].reduce((a, b) => a + b, 0);
  const pgCpu = pgSampler.total();
  // This probe's own transaction takes an id too: counted off in the difference (pgCommits).
  const x = await db.query<{ n: string }>('select pg_current_xact_id()::text as n');
  return { redisCpu, redisCalls, redisByCommand, pgCpu, pgXacts: Number(x.rows[0]!.n) };
}

/** Writing transactions between two samples, less the later sample's own. */
function pgCommits(a: { pgXacts: number }, b: { pgXacts: number }): number {
  return b.pgXacts - a.pgXacts - 1;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One streamed chat request; returns [time to first content token, time to done] in ms. */
function streamOnce(base: string, path: string, body: string, headers: Record<string, string>): Promise<[number, number]> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let first = 0;
      let tail = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (!first && /"content":"[^"]/.test(tail + chunk)) first = performance.now() - t0;
        tail = chunk.slice(-64);
      });
      res.on('end', () => (res.statusCode === 200 && first ? resolve([first, performance.now() - t0]) : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface LevelResult {
  c: number;
  ttft: number[];
  done: number[];
  perSec: number;
  errors: number;
}

async function drive(
  base: string,
  path: string,
  headers: Record<string, string>,
  c: number,
  n: number,
  convPrefix: string,
  model = 'default',
): Promise<LevelResult> {
  const ttft: number[] = [];
  const done: number[] = [];
  let errors = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async (_, w) => {
      for (;;) {
        const i = next++;
        if (i >= n) return;
        // One-off conversations: the model sees one short message, as in the floor.
        const body = JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: `hello ${convPrefix} ${w} ${i}` }] });
        try {
          const [f, d] = await streamOnce(base, path, body, headers);
          ttft.push(f);
          done.push(d);
        } catch {
          errors++;
        }
      }
    }),
  );
  return { c, ttft, done, perSec: (n / (performance.now() - t0)) * 1000, errors };
}

function row(label: string, r: LevelResult): string {
  const f = (x: number) => x.toFixed(1).padStart(7);
  return `${label.padEnd(10)} c=${String(r.c).padEnd(3)} ttft p50 ${f(pct(r.ttft, 50))} p90 ${f(pct(r.ttft, 90))} p99 ${f(pct(r.ttft, 99))} | done p50 ${f(pct(r.done, 50))} p90 ${f(pct(r.done, 90))} p99 ${f(pct(r.done, 99))} | ${r.perSec.toFixed(0).padStart(5)} turns/s${r.errors ? ` | ${r.errors} errors` : ''}`;
}

async function main(): Promise<void> {
  const fake = await startProc(
    'fake-llm',
    [join(packageRoot, 'dist/test/fakes/fake-llm.js'), '--port', '0', '--tokens', values.tokens!, '--token-delay-ms', values['token-delay-ms']!],
    {},
    /"url"/,
  );
  // A failed run still stops the fake (the gateway processes are stopped in the loop's finally).
  process.once('exit', () => fake.proc.kill('SIGKILL'));
  const delay = Number(values['token-delay-ms']) > 0 ? ` (${values['token-delay-ms']} ms apart)` : '';
  console.log(
    `fake LLM at ${fake.url}, ${values.tokens} tokens per reply${delay}, ${REQUESTS} requests per level (at least ${PER_CONNECTION} per connection)\n`,
  );
  const floor: Record<number, LevelResult> = {};
  for (const c of LEVELS) {
    await drive(fake.url!, '/v1/chat/completions', {}, c, Math.min(50, REQUESTS), 'warm', 'fake-model');
    floor[c] = await drive(fake.url!, '/v1/chat/completions', {}, c, Math.max(REQUESTS, c * PER_CONNECTION), 'floor', 'fake-model');
    console.log(row('floor', floor[c]!));
  }

  const runs = values
    .topology!.split(',')
    .flatMap((t) => (t === 'split' ? values.workers!.split(',').map((w) => ({ topology: t, workers: Number(w) })) : [{ topology: t, workers: 0 }]));
  const summary: TopologyFigures[] = [];
  for (const { topology, workers } of runs) {
    const figures: TopologyFigures = { label: topology === 'split' ? `split (1 ingress + ${workers} workers)` : 'all-in-one' };
    const redis = await TestRedis.start();
    const db = await createTestDatabase();
    const env = {
      REDIS_URL: redis.url,
      // --pg-socket DIR: the gateway reaches Postgres over its Unix socket in DIR instead of TCP loopback.
      DATABASE_URL: values['pg-socket'] ? overSocket(db.url, values['pg-socket']) : db.url,
      SWITCHBOARD_API_KEYS: KEY,
      OPENAI_BASE_URL: `${fake.url}/v1`,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_LOG_LEVEL: 'info',
      SWITCHBOARD_WORKER_CONCURRENCY: values['worker-concurrency']!,
      // One key drives every level: no request rate limit, and no cap on its concurrent turns.
      SWITCHBOARD_HTTP_RATE_LIMIT: 'off',
      SWITCHBOARD_MAX_TURNS_PER_KEY: '0',
      // Four connections per process are plenty for these short statements, and on
      // two cores fewer Postgres backends cost less CPU (2.5 against 2.8-3.1 ms per
      // turn with 10). SWITCHBOARD_DB_POOL_SIZE overrides it; PGOPTIONS passes through.
      SWITCHBOARD_DB_POOL_SIZE: process.env.SWITCHBOARD_DB_POOL_SIZE ?? '4',
      ...(process.env.PGOPTIONS ? { PGOPTIONS: process.env.PGOPTIONS } : {}),
      // A queue setting to compare (e.g. SWITCHBOARD_QUEUE_OPEN_ON_ACCEPT=false) passes through.
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('SWITCHBOARD_QUEUE_')) as [string, string][]),
    };
    const bin = join(packageRoot, 'bin/switchboard.js');
    const procs: Proc[] = [];
    try {
      if (topology === 'split') {
        procs.push(await startProc('ingress', [bin, 'ingress'], env, /switchboard is listening/));
        for (let i = 1; i <= workers; i++) procs.push(await startProc(`worker-${i}`, [bin, 'worker'], env, /worker started/));
      } else {
        procs.push(await startProc('all-in-one', [bin, 'start'], env, /switchboard is listening/));
      }
      const base = procs[0]!.url!;
      const redisProbe = new Redis(redis.url);
      const dbProbe = new pg.Client({ connectionString: db.url });
      await dbProbe.connect();
      await new Promise((r) => setTimeout(r, 1000));
      const idle = procs.map((p) => `${p.name} ${rssMb(p.proc.pid!)} MB`).join(', ');
      console.log(`\ngateway: ${figures.label} (Redis + Postgres); idle RSS: ${idle}`);
      const warm = await drive(base, '/v1/chat/completions', { authorization: `Bearer ${KEY}` }, 64, Number(values.warmup), 'warmup');
      console.log(`warm-up: ${values.warmup} requests at c=64, ${warm.perSec.toFixed(0)} turns/s${warm.errors ? `, ${warm.errors} errors` : ''}`);
      for (const c of LEVELS) {
        // Autovacuum's part, done by hand where the server has it off (CI's Postgres does):
        // without it the dead row versions of earlier levels slow down every later one.
        await dbProbe.query('vacuum analyze');
        await drive(base, '/v1/chat/completions', { authorization: `Bearer ${KEY}` }, c, Math.min(50, REQUESTS), `warm-${c}`);
        const n = Math.max(REQUESTS, c * PER_CONNECTION);
        const pids = [...procs.map((p) => p.proc.pid!), fake.proc.pid!];
        const cpu0 = pids.map(cpuMs);
        const self0 = process.cpuUsage();
        const svc0 = await serviceCounters(redisProbe, dbProbe);
        const r = await drive(base, '/v1/chat/completions', { authorization: `Bearer ${KEY}` }, c, n, `load-${c}`);
        const selfCpu = process.cpuUsage(self0);
        const svc1 = await serviceCounters(redisProbe, dbProbe);
        const perTurn = pids.map((pid, i) => (cpuMs(pid) - cpu0[i]!) / n);
        console.log(row('gateway', r));
        console.log(
          `${'cpu/turn'.padEnd(10)} c=${String(c).padEnd(3)} ${[...procs.map((p) => p.name), 'fake-llm'].map((name, i) => `${name} ${perTurn[i]!.toFixed(2)} ms`).join(', ')}, bench client ${((selfCpu.user + selfCpu.system) / 1000 / n).toFixed(2)} ms, ` +
            `redis ${((svc1.redisCpu - svc0.redisCpu) / n).toFixed(2)} ms (${((svc1.redisCalls - svc0.redisCalls) / n).toFixed(1)} commands), ` +
            `postgres ${((svc1.pgCpu - svc0.pgCpu) / n).toFixed(2)} ms (${(pgCommits(svc0, svc1) / n).toFixed(1)} commits)`,
        );
        if (values.detail)
          console.log(
            `${'redis/turn'.padEnd(10)} c=${String(c).padEnd(3)} ` +
              [...svc1.redisByCommand]
                .map(([k, v]) => [k, (v - (svc0.redisByCommand.get(k) ?? 0)) / n] as const)
                .filter(([, v]) => v >= 0.1)
                .sort((a, b) => b[1] - a[1])
                .map(([k, v]) => `${k} ${v.toFixed(1)}`)
                .join(', '),
          );
        const fl = floor[c]!;
        if (c === 64) {
          figures.perSec64 = { gateway: r.perSec, floor: fl.perSec };
          figures.cpu64 = { gateway: perTurn.slice(0, -1).reduce((a, b) => a + b, 0), fakeLlm: perTurn[perTurn.length - 1]! };
          figures.redisCommands64 = (svc1.redisCalls - svc0.redisCalls) / n;
          figures.pgTransactions64 = pgCommits(svc0, svc1) / n;
        }
        if (c === 1) figures.ttft1 = { p50: pct(r.ttft, 50), p99: pct(r.ttft, 99), floorP50: pct(fl.ttft, 50), floorP99: pct(fl.ttft, 99) };
        console.log(
          `${'added'.padEnd(10)} c=${String(c).padEnd(3)} ttft p50 ${(pct(r.ttft, 50) - pct(fl.ttft, 50)).toFixed(1).padStart(7)} p99 ${(pct(r.ttft, 99) - pct(fl.ttft, 99)).toFixed(1).padStart(7)} ms`,
        );
      }
      redisProbe.disconnect();
      await dbProbe.end();
      console.log(`RSS after load: ${procs.map((p) => `${p.name} ${rssMb(p.proc.pid!)} MB`).join(', ')}`);
      console.log(`targets, ${figures.label}:\n${targetLines(figures).join('\n')}`);
      summary.push(figures);
    } finally {
      for (const p of procs) p.proc.kill('SIGTERM');
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && procs.some((p) => p.proc.exitCode === null && p.proc.signalCode === null)) await new Promise((r) => setTimeout(r, 100));
      for (const p of procs) if (p.proc.exitCode === null) p.proc.kill('SIGKILL');
      await redis.stop();
      await db.drop().catch(() => {});
    }
  }
  if (summary.length > 1) {
    console.log('\nsummary (ratios to the floor of this run):');
    for (const f of summary) console.log(`${f.label}:\n${targetLines(f).join('\n')}`);
  }
  fake.proc.kill('SIGTERM');
  agent.destroy();
  pgSampler.stop();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
