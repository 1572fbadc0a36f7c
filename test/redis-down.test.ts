/**
 * Issue #21: Redis down. ioredis with maxRetriesPerRequest null waits for a reconnect forever, so
 * an ingress that enqueued (or rate-limited, or followed the turn) through it would hang. With real
 * processes and a private redis-server that is killed: every request to the HTTP API is answered
 * 503 with Retry-After at once (streamed or not); a message already written to the inbox stays
 * there, and once Redis is back the recovery sweep drains it: the retry with the same
 * Idempotency-Key gets the answer, and the model was asked once.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess, readyz, TEST_OPERATOR_KEY } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

/** Process start on a busy machine (2 cores shared by many test runs). */
const SLOW_START = { startTimeoutMs: 120_000 };

/** A request that hangs fails the test here instead of waiting forever (not a speed check). */
const HANG_MS = 30_000;

async function chat(baseUrl: string, opts: { conversation: string; idem: string; text: string; stream: boolean }) {
  const res = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${API_KEY}`,
      'content-type': 'application/json',
      'idempotency-key': opts.idem,
      'x-switchboard-conversation': opts.conversation,
    },
    body: JSON.stringify({ model: 'default', stream: opts.stream, messages: [{ role: 'user', content: opts.text }] }),
    signal: AbortSignal.timeout(HANG_MS),
  });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body, content: body?.choices?.[0]?.message?.content as string | undefined };
}

describe('Redis down', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url });
    const env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      SWITCHBOARD_OPERATOR_KEYS: TEST_OPERATOR_KEY,
    };
    procs.push(...(await Promise.all([GatewayProcess.spawn('ingress', env, SLOW_START), GatewayProcess.spawn('worker', env, SLOW_START)])));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await db?.end();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  }, 120_000);

  it('is a 503 with Retry-After at once; once Redis is back the retry gets the answer, asked of the model once', async () => {
    const url = procs[0]!.url!;
    const ok = await chat(url, { conversation: 'redis-down', idem: 'k-before', text: 'before', stream: false });
    expect(ok.content).toBe('echo: before');

    await redis.stop();
    // The gateway has seen it go (its readiness says so): from here on nothing may hang.
    await eventually(async () => ((await (await readyz(url)).json()) as { checks: { queue: { ok: boolean } } }).checks.queue.ok === false, 30_000, 200);
    const refused = await chat(url, { conversation: 'redis-down', idem: 'k-during', text: 'during', stream: false });
    expect(refused.status).toBe(503);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(refused.body).toMatchObject({ error: { code: 'queue_unavailable', type: 'server_error' } });
    const streamed = await chat(url, { conversation: 'redis-down', idem: 'k-during', text: 'during', stream: true });
    expect(streamed.status).toBe(503);
    expect(Number(streamed.retryAfter)).toBeGreaterThan(0);
    const other = await chat(url, { conversation: 'redis-down-2', idem: 'k-other', text: 'other', stream: true });
    expect(other.status).toBe(503);

    await redis.startAgain();
    const retried = await eventually(
      async () => {
        const r = await chat(url, { conversation: 'redis-down', idem: 'k-during', text: 'during', stream: false });
        return r.status === 200 ? r : null;
      },
      60_000,
      500,
    );
    expect(retried.content).toBe('echo: during');
    // Answered once: one turn for it, one model request, one reply in the transcript.
    expect(fake.requests.filter((r) => lastUserText(r.body) === 'during')).toHaveLength(1);
    const replies = await db.query(`select m.id from messages m where m.role = 'assistant' and m.content::text like '%echo: during%'`);
    expect(replies.rows).toHaveLength(1);
  }, 180_000);
});
