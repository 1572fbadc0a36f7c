/**
 * Streams a client can trust, with real processes (two ingresses, a worker), real Redis and Postgres:
 * - a streamed request retried with the same Idempotency-Key (after its connection dropped, on the
 *   same or another ingress, during or after the turn) gets everything from the start, then the rest:
 *   its content is exactly the stored answer;
 * - writes the Redis client resends after a reconnect (CLIENT KILL, a Redis restart) never show
 *   twice: bus events are numbered and repeats dropped;
 * - a database that refuses connections is a 503 with Retry-After, and the retry gets the answer.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ignoreError } from '../kernel/errors.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess, TEST_OPERATOR_KEY } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

/** 60 words at 50 ms: about 3 s of streaming. */
const answerFor = (q: string) => `${q}: ${Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ')}`;

interface Streamed {
  status: number;
  content: string;
  /** Whether the stream ended with [DONE] after a finishing chunk. */
  finished: boolean;
  retryAfter: string | null;
  body?: unknown;
}

/**
 * POST /v1/chat/completions streamed, reading the SSE as a client does. `dropAfterChars`: hang up
 * once that much content has arrived (a dropped connection).
 */
async function chat(
  baseUrl: string,
  opts: { conversation: string; idem: string; text: string; stream?: boolean; dropAfterChars?: number; onContent?: (content: string) => void },
): Promise<Streamed> {
  const abort = new AbortController();
  const res = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${API_KEY}`,
      'content-type': 'application/json',
      'idempotency-key': opts.idem,
      'x-switchboard-conversation': opts.conversation,
    },
    body: JSON.stringify({ model: 'default', stream: opts.stream ?? true, messages: [{ role: 'user', content: opts.text }] }),
    signal: abort.signal,
  });
  const retryAfter = res.headers.get('retry-after');
  if (!(opts.stream ?? true) || !res.headers.get('content-type')?.includes('text/event-stream')) {
    const body = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
    return { status: res.status, content: body.choices?.[0]?.message.content ?? '', finished: res.ok, retryAfter, body };
  }
  let content = '';
  let finished = false;
  let buf = '';
  const decoder = new TextDecoder();
  try {
    for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(part, { stream: true });
      let i = buf.indexOf('\n\n');
      for (; i >= 0; i = buf.indexOf('\n\n')) {
        const line = buf.slice(0, i).replace(/^data: /, '');
        buf = buf.slice(i + 2);
        if (line === '[DONE]') continue;
        const chunk = JSON.parse(line) as { choices?: Array<{ delta?: { content?: string }; finish_reason?: string | null }> };
        content += chunk.choices?.[0]?.delta?.content ?? '';
        if (chunk.choices?.[0]?.finish_reason) finished = true;
        opts.onContent?.(content);
      }
      if (opts.dropAfterChars !== undefined && content.length >= opts.dropAfterChars) {
        abort.abort();
        break;
      }
    }
  } catch (err) {
    if (!abort.signal.aborted) throw err;
  }
  return { status: res.status, content, finished, retryAfter };
}

describe('streams clients can trust', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  let a: GatewayProcess;
  let b: GatewayProcess;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    fake = new FakeLlm({ recordRequests: true });
    await fake.start();
    fake.respond((req) => reply(answerFor(lastUserText(req.body)), 50));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url, max: 2 });
    const env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      SWITCHBOARD_DB_POOL_SIZE: '3',
    };
    a = await GatewayProcess.spawn('ingress', env);
    procs.push(a);
    const [second, worker] = await Promise.all([GatewayProcess.spawn('ingress', env), GatewayProcess.spawn('worker', env)]);
    b = second;
    procs.push(second, worker);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await db?.end();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  /** The assistant's stored answer in the conversation (the transcript). */
  async function stored(conversation: string): Promise<string> {
    const res = await fetch(`${a.url}/v1/conversations/${conversation}/messages`, { headers: { authorization: `Bearer ${API_KEY}` } });
    const body = (await res.json()) as { data: Array<{ role: string; content: string }> };
    return body.data.filter((m) => m.role === 'assistant').at(-1)?.content ?? '';
  }

  /** Every stored answer of the conversation, oldest first. */
  async function storedAll(conversation: string): Promise<string[]> {
    const res = await fetch(`${a.url}/v1/conversations/${conversation}/messages`, { headers: { authorization: `Bearer ${API_KEY}` } });
    const body = (await res.json()) as { data: Array<{ role: string; content: string }> };
    return body.data.filter((m) => m.role === 'assistant').map((m) => m.content);
  }

  async function turnDone(conversation: string): Promise<void> {
    await eventually(async () => (await stored(conversation)) !== '', 30_000, 100);
  }

  it.each([
    ['the same ingress', () => a],
    ['another ingress process', () => b],
  ])(
    'a streamed request dropped mid-answer and retried on %s that already follows the conversation gets the whole stored answer, once',
    async (_where, retryOn) => {
      const conversation = `join-${retryOn() === a ? 'a' : 'b'}`;
      const first = await chat(a.url!, { conversation, idem: `k-${conversation}`, text: 'q1', dropAfterChars: 40 });
      expect(first.content.length).toBeGreaterThanOrEqual(40);
      expect(first.finished).toBe(false);
      // Another request of the conversation waits on the retry's ingress (its message is answered
      // next), so that process already follows the conversation's topic when the retry arrives.
      const waiting = chat(retryOn().url!, { conversation, idem: `k-${conversation}-next`, text: 'next' });
      // Awaited below; should an assertion fail first, its rejection (the processes are killed) is not news.
      waiting.catch(ignoreError('awaited at the end of the test'));
      await new Promise((r) => setTimeout(r, 300));
      // The turn goes on without the client; the retry joins it midway.
      const retry = await chat(retryOn().url!, { conversation, idem: `k-${conversation}`, text: 'q1' });
      expect(retry.finished).toBe(true);
      expect(retry.content).toBe(answerFor('q1'));
      const answers = await storedAll(conversation);
      expect(retry.content).toBe(answers[0]);
      // Late in the turn too: a second retry while (or after) it ends, not streamed.
      const again = await chat(retryOn().url!, { conversation, idem: `k-${conversation}`, text: 'q1', stream: false });
      expect(again.content).toBe(answers[0]);
      expect((await waiting).content).toBe(answerFor('next'));
    },
    90_000,
  );

  it('a retry after the turn finished gets exactly the stored answer, streamed and not; the model was called once', async () => {
    const conversation = 'join-after';
    const calls = fake.requests.length;
    await chat(a.url!, { conversation, idem: 'k-after', text: 'q2', dropAfterChars: 20 });
    await turnDone(conversation);
    const answer = await stored(conversation);
    expect(answer).toBe(answerFor('q2'));
    for (const on of [a, b]) {
      const streamed = await chat(on.url!, { conversation, idem: 'k-after', text: 'q2' });
      expect(streamed.content).toBe(answer);
      expect(streamed.finished).toBe(true);
      const plain = await chat(on.url!, { conversation, idem: 'k-after', text: 'q2', stream: false });
      expect(plain.content).toBe(answer);
    }
    expect(fake.requests.length - calls).toBe(1);
  }, 90_000);

  /** The bus stream of a conversation's topic in Redis. */
  async function streamKey(conversation: string): Promise<string> {
    const r = new (await import('ioredis')).Redis(redis.url);
    try {
      const keys = await eventually(async () => {
        const k = await r.keys(`*bus:conv:*${conversation}*`);
        return k.length ? k : null;
      });
      return keys[0]!;
    } finally {
      r.disconnect();
    }
  }

  it('events written twice to the stream (what a resend after a reconnect does) show once', async () => {
    const conversation = 'dup-resend';
    const { Redis } = await import('ioredis');
    const r = new Redis(redis.url);
    let injected = false;
    let injecting: Promise<void> | undefined;
    const got = await chat(a.url!, {
      conversation,
      idem: 'k-dup',
      text: 'q3',
      onContent: (content) => {
        if (injected || content.length < 60) return;
        injected = true;
        injecting = (async () => {
          // Every entry so far, written again, as ioredis resends the XADDs it had no answer for.
          const key = await streamKey(conversation);
          const entries = (await r.xrange(key, '-', '+')) as [string, string[]][];
          for (const [, fields] of entries) await r.xadd(key, '*', ...fields);
        })();
      },
    });
    await injecting;
    r.disconnect();
    expect(injected).toBe(true);
    expect(got.finished).toBe(true);
    expect(got.content).toBe(answerFor('q3'));
    expect(got.content).toBe(await stored(conversation));
  }, 90_000);

  it('Redis connections killed (CLIENT KILL) and Redis restarted mid-stream: the answer is shown exactly once', async () => {
    const { Redis } = await import('ioredis');
    const admin = new Redis(redis.url, { maxRetriesPerRequest: null });
    admin.on('error', () => {});
    // CLIENT KILL every client but this one, a few times while the answer streams.
    const killing = { stop: false };
    const killer = (async () => {
      while (!killing.stop) {
        await new Promise((r) => setTimeout(r, 250));
        await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes').catch(() => 0);
      }
    })();
    const killed = await chat(a.url!, { conversation: 'dup-kill', idem: 'k-kill', text: 'q4' });
    killing.stop = true;
    await killer;
    admin.disconnect();
    expect(killed.finished).toBe(true);
    expect(killed.content).toBe(answerFor('q4'));
    expect(killed.content).toBe(await stored('dup-kill'));

    let restarted = false;
    const restart = await chat(b.url!, {
      conversation: 'dup-restart',
      idem: 'k-restart',
      text: 'q5',
      onContent: (content) => {
        if (!restarted && content.length >= 60) {
          restarted = true;
          void redis.restart(200);
        }
      },
    });
    expect(restarted).toBe(true);
    expect(restart.finished).toBe(true);
    expect(restart.content).toBe(answerFor('q5'));
    expect(restart.content).toBe(await stored('dup-restart'));
  }, 120_000);
});

describe('a database that refuses connections', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let admin: pg.Client;
  let dbName: string;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    fake = new FakeLlm({ recordRequests: false });
    await fake.start();
    fake.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    dbName = new URL(pgdb.url).pathname.slice(1);
    const adminUrl = new URL(pgdb.url);
    adminUrl.pathname = '/postgres';
    admin = new pg.Client({ connectionString: adminUrl.toString() });
    await admin.connect();
    const env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      SWITCHBOARD_DB_POOL_SIZE: '3',
      SWITCHBOARD_OPERATOR_KEYS: TEST_OPERATOR_KEY,
    };
    procs.push(...(await Promise.all([GatewayProcess.spawn('ingress', env), GatewayProcess.spawn('worker', env)])));
  }, 120_000);

  afterAll(async () => {
    await admin?.query(`alter database ${dbName} allow_connections true`).catch(() => undefined);
    await admin?.end();
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('is a 503 with Retry-After and code store_unavailable; once it is back, the retry gets the answer', async () => {
    const ingress = procs[0]!;
    const ok = await chat(ingress.url!, { conversation: 'pg-down', idem: 'k-before', text: 'before', stream: false });
    expect(ok.content).toBe('echo: before');

    // New connections fail with 55000 (not accepting connections), the open ones are cut (57P01).
    await admin.query(`alter database ${dbName} allow_connections false`);
    await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [dbName]);
    const refused = await chat(ingress.url!, { conversation: 'pg-down', idem: 'k-during', text: 'during', stream: false });
    expect(refused.status).toBe(503);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(refused.body).toMatchObject({ error: { code: 'store_unavailable', type: 'server_error' } });
    const streamed = await chat(ingress.url!, { conversation: 'pg-down', idem: 'k-during', text: 'during' });
    expect(streamed.status).toBe(503);
    expect(streamed.retryAfter).not.toBeNull();
    // The operator API says the same.
    const approvals = await fetch(`${ingress.url}/v1/approvals`, { headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
    expect(approvals.status).toBe(503);
    expect(approvals.headers.get('retry-after')).not.toBeNull();
    expect(await approvals.json()).toMatchObject({ error: { code: 'store_unavailable' } });

    await admin.query(`alter database ${dbName} allow_connections true`);
    const retried = await eventually(
      async () => {
        const r = await chat(ingress.url!, { conversation: 'pg-down', idem: 'k-during', text: 'during', stream: false });
        return r.status === 200 ? r : null;
      },
      30_000,
      250,
    );
    expect(retried.content).toBe('echo: during');
  }, 90_000);
});
