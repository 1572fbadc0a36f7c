/**
 * What the benchmarks share: reading a process's memory and CPU from /proc, and
 * the stack they drive (a fake LLM, a private Redis, a fresh database).
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { FakeLlm, lastUserText } from '../test/fakes/fake-llm.js';
import { createTestDatabase, type TestDatabase } from '../test/support/postgres.js';
import { TestRedis } from '../test/support/redis.js';

/** Resident memory of a process, in MB. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/** CPU time (user + system) a process has used so far, in ms. */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

/** CPU time Redis has used so far (user + system), in ms, from INFO. */
export async function redisCpuMs(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  return ['used_cpu_sys', 'used_cpu_user'].reduce((a, k) => a + Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0) * 1000, 0);
}

/**
 * CPU of every Postgres process (backends and background writers: a turn's cost
 * includes the WAL writer's), sampled every 200 ms so that a backend the pool
 * closes mid-measurement still counts up to its last sample.
 */
export class PgCpuSampler {
  private readonly seen = new Map<number, number>();
  private readonly timer = setInterval(() => this.sample(), 200);

  private sample(): void {
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      const pid = Number(name);
      try {
        if (this.seen.has(pid) || readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') this.seen.set(pid, cpuMs(pid));
      } catch {
        /* gone: keep its last sample */
      }
    }
  }

  /** CPU ms used so far by every Postgres process seen. */
  total(): number {
    this.sample();
    return [...this.seen.values()].reduce((a, b) => a + b, 0);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export interface BenchStack {
  fake: FakeLlm;
  redis: TestRedis;
  db: TestDatabase;
  /** Environment for gateway processes on this stack (Redis + Postgres, the fake as provider). */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** An in-process fake LLM answering `echo: <message><suffix>`, a private Redis and a fresh database. */
export async function startBenchStack(apiKey: string, replySuffix = ''): Promise<BenchStack> {
  const fake = new FakeLlm({ recordRequests: false });
  await fake.start();
  fake.respond((req) => [{ kind: 'text', text: `echo: ${lastUserText(req.body)}${replySuffix}` }]);
  const redis = await TestRedis.start();
  const db = await createTestDatabase();
  const env = {
    REDIS_URL: redis.url,
    DATABASE_URL: db.url,
    SWITCHBOARD_HTTP_PORT: '0',
    SWITCHBOARD_API_KEYS: apiKey,
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    OPENAI_API_KEY: 'fake',
    SWITCHBOARD_MODEL: 'fake-model',
    SWITCHBOARD_LOG_LEVEL: 'info',
    // The benchmarks drive one key hard: no request rate limit, no cap on its concurrent turns.
    SWITCHBOARD_HTTP_RATE_LIMIT: 'off',
    SWITCHBOARD_MAX_TURNS_PER_KEY: '0',
  };
  return {
    fake,
    redis,
    db,
    env,
    async close() {
      await fake.close();
      await redis.stop();
      await db.drop().catch(() => {});
    },
  };
}
