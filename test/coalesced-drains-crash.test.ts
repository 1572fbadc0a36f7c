/**
 * One-off requests arriving together share a BullMQ job (adapters/queue/coalescing.ts); the
 * worker running that job is SIGKILLed in the middle of its turns. Real processes, real Redis and
 * Postgres: every request still gets its one complete answer, each stored once.
 */

import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess, openaiClient } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const REQUESTS = 12;
const answerFor = (q: string) => `${Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ')} ${q}`;

describe('coalesced drains and a worker killed mid-turn', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(answerFor(lastUserText(req.body)), 40)); // about 1.2 s of streaming each
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url });
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await db?.end();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('runs every turn of a killed worker’s jobs again on the other worker: each request gets its answer, once', async () => {
    const env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      SWITCHBOARD_LOCK_DURATION_MS: '2000',
      SWITCHBOARD_STALLED_INTERVAL_MS: '1000',
      // One API key sends them all: no per-key or per-sender cap holds some back.
      SWITCHBOARD_MAX_TURNS_PER_KEY: '0',
      SWITCHBOARD_MAX_TURNS_PER_SENDER: '0',
    };
    const ingress = await GatewayProcess.spawn('ingress', env);
    procs.push(ingress);
    // Both workers run before the requests: their recovery sweeps at start are behind them, so what
    // the killed one held comes back only through BullMQ (its lock expires after 2 s).
    const workers = await Promise.all([GatewayProcess.spawn('worker', env), GatewayProcess.spawn('worker', env)]);
    procs.push(...workers);

    // No conversation named, no Idempotency-Key: each request's conversation is minted for it.
    const client = openaiClient(ingress.url!, API_KEY);
    const questions = Array.from({ length: REQUESTS }, (_, i) => `question-${i}`);
    const answers = Promise.all(
      questions.map((q) => client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: q }] }, { timeout: 60_000 })),
    );
    const running = async () => (await db.query<{ worker: string }>(`select worker from turns where status = 'running'`)).rows;
    await eventually(async () => (await running()).length === REQUESTS, 30_000);
    const r = new Redis(redis.url);
    const jobs = Number(await r.get('sb:drain:id'));
    // Fewer BullMQ jobs than drains: the requests' drains left the ingress together.
    expect(jobs).toBeLessThan(REQUESTS);
    const pids = (await running()).map((t) => Number(t.worker.split(':').pop()));
    const doomed = workers.find((w) => w.proc.pid === pids[0])!;
    const held = pids.filter((p) => p === doomed.proc.pid).length;
    await doomed.kill('SIGKILL');
    const killedAt = Date.now();
    const got = await answers;
    expect(got.map((a) => a.choices[0]!.message.content)).toEqual(questions.map(answerFor));
    const perConversation = (
      await db.query<{ assistant: number; user: number }>(
        `select count(*) filter (where role = 'assistant')::int as assistant, count(*) filter (where role = 'user')::int as user
         from messages group by conversation_id`,
      )
    ).rows;
    expect(perConversation).toHaveLength(REQUESTS);
    expect(perConversation.every((c) => c.assistant === 1 && c.user === 1)).toBe(true);
    const turns = (await db.query(`select status, attempt from turns`)).rows;
    expect(turns).toHaveLength(REQUESTS);
    expect(turns.every((t) => t.status === 'done')).toBe(true);
    // The killed worker's turns were resumed (a second attempt), by the job that carried them: no job was added
    // since (a recovery sweep adds one per conversation, and would not have run within 30 s).
    expect(turns.filter((t) => t.attempt === 2)).toHaveLength(held);
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    expect(Number(await r.get('sb:drain:id'))).toBe(jobs);
    await r.quit();
    expect((await db.query(`select count(*)::int as n from inbox where consumed_at is null`)).rows[0].n).toBe(0);
  }, 120_000);
});
