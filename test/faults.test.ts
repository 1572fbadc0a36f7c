/**
 * Faults under load, with real processes: a worker SIGKILLed, Redis restarted,
 * Postgres restarted, a worker SIGTERMed — while a load of ordered messages
 * runs. After each: zero messages lost, zero answered twice, order kept.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeLlm, lastUserText } from './fakes/fake-llm.js';
import { API_KEY, GatewayProcess } from './support/gateway.js';
import { checkInvariants, runLoad } from './support/load.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { PrivatePostgres } from './support/private-postgres.js';
import { TestRedis } from './support/redis.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Stack {
  fake: FakeLlm;
  redis: TestRedis;
  dbUrl: string;
  env: Record<string, string>;
  ingress: GatewayProcess;
  workers: GatewayProcess[];
  cleanup: () => Promise<void>;
}

async function stack(opts: { privatePg?: PrivatePostgres } = {}): Promise<Stack> {
  const fake = new FakeLlm({ recordRequests: false });
  await fake.start();
  fake.respond((req) => [
    { kind: 'delay', ms: 60 },
    { kind: 'text', text: `echo: ${lastUserText(req.body)}` },
  ]);
  const redis = await TestRedis.start();
  let shared: TestDatabase | undefined;
  let dbUrl: string;
  if (opts.privatePg) dbUrl = opts.privatePg.url;
  else {
    shared = await createTestDatabase();
    dbUrl = shared.url;
  }
  const dir = mkdtempSync(join(tmpdir(), 'sb-faults-'));
  const config = join(dir, 'switchboard.json');
  // Fast recovery for the test: locks expire and stuck inbox rows are re-drained within seconds.
  // The load sends 180 requests in seconds from one key: no request rate limit (the cap on
  // the key's concurrent turns stays on, so refused drains are deferred during the faults too).
  writeFileSync(
    config,
    JSON.stringify({
      queue: { lockDurationMs: 2000, stalledIntervalMs: 1000, recoverAfterMs: 2000, recoverIntervalMs: 1000, backoffMs: 200 },
      tools: { planner: false },
      limits: { apiKey: 'off' },
    }),
  );
  const env = {
    REDIS_URL: redis.url,
    DATABASE_URL: dbUrl,
    SWITCHBOARD_CONFIG: config,
    SWITCHBOARD_DATA: dir,
    SWITCHBOARD_HTTP_PORT: '0',
    SWITCHBOARD_API_KEYS: API_KEY,
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    OPENAI_API_KEY: 'fake',
    SWITCHBOARD_MODEL: 'fake-model',
  };
  const ingress = await GatewayProcess.spawn('ingress', env);
  const workers = await Promise.all([GatewayProcess.spawn('worker', env), GatewayProcess.spawn('worker', env)]);
  const procs = [ingress, ...workers];
  return {
    fake,
    redis,
    dbUrl,
    env,
    ingress,
    workers,
    cleanup: async () => {
      await Promise.all(procs.concat(workers).map((p) => p.kill('SIGKILL')));
      await fake.close();
      await redis.stop();
      await shared?.drop();
    },
  };
}

describe('faults under load', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  /** The load, and a check that the fault lands while it is still running. */
  const load = (s: Stack, prefix: string) => {
    const p = runLoad({ urls: [s.ingress.url!], apiKey: API_KEY, conversations: 12, messagesPerConversation: 15, concurrency: 12, prefix });
    let finished = false;
    void p.then(() => (finished = true));
    return Object.assign(p, { midway: () => expect(finished, 'the fault must land while the load runs').toBe(false) });
  };

  const expectClean = async (s: Stack, prefix: string, result: Awaited<ReturnType<typeof load>>) => {
    expect(result.failedRequests).toBe(0);
    expect(result.answeredOk).toBe(result.sent);
    const inv = await checkInvariants(s.dbUrl, prefix);
    expect(inv).toEqual({ inboxRows: result.sent, lost: 0, duplicated: 0, orderViolations: 0 });
  };

  it('a worker SIGKILLed mid-load', async () => {
    const s = await stack();
    cleanups.push(s.cleanup);
    const running = load(s, 'kill');
    await sleep(600);
    running.midway();
    await s.workers[0]!.kill('SIGKILL');
    s.workers.push(await GatewayProcess.spawn('worker', s.env));
    await expectClean(s, 'kill', await running);
  });

  it('Redis restarted (empty) mid-load', async () => {
    const s = await stack();
    cleanups.push(s.cleanup);
    const running = load(s, 'redis');
    await sleep(600);
    running.midway();
    await s.redis.restart(500);
    await expectClean(s, 'redis', await running);
  });

  it('Postgres restarted mid-load', async () => {
    const pgPriv = await PrivatePostgres.start();
    const s = await stack({ privatePg: pgPriv });
    cleanups.push(async () => {
      await s.cleanup();
      await pgPriv.stop();
    });
    const running = load(s, 'pg');
    await sleep(600);
    running.midway();
    await pgPriv.restart(800);
    await expectClean(s, 'pg', await running);
  });

  it('a worker SIGTERMed mid-load', async () => {
    const s = await stack();
    cleanups.push(s.cleanup);
    const running = load(s, 'term');
    await sleep(600);
    running.midway();
    expect(await s.workers[0]!.kill('SIGTERM')).toBe(0);
    await expectClean(s, 'term', await running);
  });
});
