/**
 * Failures of the parts underneath: a worker SIGKILLed in the middle of a
 * streamed turn, and Redis restarting. Real processes, real Redis and Postgres.
 */

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const LONG_ANSWER = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

describe('a worker killed mid-turn', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(() => reply(LONG_ANSWER, 40)); // about 1.6 s of streaming
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

  it('is retried by the other worker: the client sees exactly one complete answer, no inbox row lost or consumed twice', async () => {
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
    };
    const ingress = await GatewayProcess.spawn('ingress', env);
    procs.push(ingress);
    const workers = await Promise.all([GatewayProcess.spawn('worker', env), GatewayProcess.spawn('worker', env)]);
    procs.push(...workers);

    const client = openaiClient(ingress.url!, API_KEY, { 'X-Switchboard-Conversation': 'crash-1' });
    const stream = await client.chat.completions.create({ model: 'default', stream: true, messages: [{ role: 'user', content: 'tell me a long story' }] });
    let text = '';
    let killed: GatewayProcess | undefined;
    let last: any;
    for await (const ch of stream) {
      text += ch.choices[0]?.delta?.content ?? '';
      last = ch;
      if (!killed && text.split(' ').length >= 8) {
        const running = (await db.query<{ worker: string }>(`select worker from turns where status = 'running'`)).rows[0]!;
        const pid = Number(running.worker.split(':').pop());
        killed = workers.find((w) => w.proc.pid === pid)!;
        expect(killed).toBeDefined();
        await killed.kill('SIGKILL');
      }
    }
    expect(killed).toBeDefined();
    expect(text).toBe(LONG_ANSWER);
    expect(last.switchboard.conversation).toBe('crash-1');

    const turns = (await db.query('select * from turns')).rows;
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ status: 'done', attempt: 2 });
    expect(turns[0].worker).not.toContain(`:${killed!.proc.pid}`);
    const inbox = (await db.query('select * from inbox')).rows;
    expect(inbox).toHaveLength(1);
    expect(inbox[0].consumed_at).not.toBeNull();
    const messages = (await db.query(`select role from messages order by id`)).rows.map((r) => r.role);
    expect(messages).toEqual(['user', 'assistant']);
    expect(fake.requests).toHaveLength(2); // the first attempt, and the retry

    // The conversation carries on normally afterwards.
    fake.respond((req) => reply(`short: ${lastUserText(req.body)}`));
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'and now?' }] });
    expect(r.choices[0]!.message.content).toBe('short: and now?');
  });
});

describe('a worker told to stop (SIGTERM) in the middle of a turn', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  const procs: GatewayProcess[] = [];
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(() => reply(LONG_ANSWER, 40));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('finishes the running turn, takes no new one, and exits cleanly', async () => {
    const env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
    };
    const ingress = await GatewayProcess.spawn('ingress', env);
    const worker = await GatewayProcess.spawn('worker', env);
    procs.push(ingress, worker);
    const stream = await openaiClient(ingress.url!, API_KEY, { 'X-Switchboard-Conversation': 'sigterm' }).chat.completions.create({
      model: 'default',
      stream: true,
      messages: [{ role: 'user', content: 'go' }],
    });
    let text = '';
    let exited: Promise<number | null> | undefined;
    for await (const ch of stream) {
      text += ch.choices[0]?.delta?.content ?? '';
      if (!exited && text.split(' ').length >= 5) exited = worker.kill('SIGTERM');
    }
    expect(text).toBe(LONG_ANSWER); // the turn finished although the worker was told to stop
    expect(await exited).toBe(0);
    expect(worker.logs.some((l) => l.includes('shut down cleanly'))).toBe(true);
    expect(fake.requests).toHaveLength(1); // not run twice
  });
});

describe('Redis restarting', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let gw: Gateway;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`pong: ${lastUserText(req.body)}`));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    gw = await startGateway(testConfig(fake, { redisUrl: redis.url, databaseUrl: pgdb.url }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('while idle: the next message is served', async () => {
    const client = openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': 'redis-restart' });
    const first = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'before' }] });
    expect(first.choices[0]!.message.content).toBe('pong: before');
    await redis.restart(500);
    const after = await eventually(async () => {
      const r = await client.chat.completions.create({ model: 'default', stream: true, messages: [{ role: 'user', content: 'after' }] });
      let text = '';
      for await (const ch of r) text += ch.choices[0]?.delta?.content ?? '';
      return text;
    }, 20_000);
    expect(after).toBe('pong: after');
    const ready = await fetch(`${gw.url}/readyz`);
    expect(ready.status).toBe(200);
  });
});
