/**
 * Closing while Redis is gone. BullMQ 6.7's Worker.close() waits for an 'end' event that a
 * client parked in ioredis' "reconnecting" state never emits (taskforcesh/bullmq#4656): a worker
 * stopping during a Redis outage (or after an unlucky restart) never finished closing, and a
 * SIGTERM never ended the process. The queue lets its running jobs finish, gives BullMQ's teardown
 * a bounded grace, then drops its connections: close() resolves and nothing keeps running.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { BullQueue } from '../adapters/queue/bullmq.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, GatewayProcess } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { freePort, TestRedis } from './support/redis.js';

const SETTINGS = { prefix: 'sbt-close', attempts: 3, backoffMs: 100, lockDurationMs: 3_000, stalledIntervalMs: 1_000 };

describe('a queue closing without Redis', () => {
  it('closes although Redis was never reachable', async () => {
    const q = new BullQueue<{ n: number }>('drain', `redis://127.0.0.1:${await freePort()}`, SETTINGS);
    q.process(async () => {}, { concurrency: 2 });
    await new Promise((r) => setTimeout(r, 300)); // its clients are reconnecting by now
    await expect(q.close()).resolves.toBeUndefined();
  }, 30_000);

  it('lets a running job finish before it drops the connections, although Redis went away', async () => {
    const redis = await TestRedis.start();
    try {
      const q = new BullQueue<{ n: number }>('drain', redis.url, SETTINGS);
      let release!: () => void;
      const held = new Promise<void>((r) => {
        release = r;
      });
      const started: number[] = [];
      const finished: number[] = [];
      q.process(
        async (job) => {
          started.push(job.data.n);
          await held;
          finished.push(job.data.n);
        },
        { concurrency: 2 },
      );
      await q.add({ n: 1 });
      for (let i = 0; i < 200 && started.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(started).toEqual([1]);
      await redis.stop();
      const closing = q.close();
      let closed = false;
      void closing.then(() => {
        closed = true;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(closed).toBe(false); // the job is still running: close waits for it
      release();
      await closing;
      expect(finished).toEqual([1]);
    } finally {
      await redis.stop();
    }
  }, 30_000);
});

describe('a gateway stopped while Redis is down', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let proc: GatewayProcess | undefined;

  afterAll(async () => {
    await proc?.kill('SIGKILL');
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('exits on SIGTERM instead of hanging in the queue teardown', async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    proc = await GatewayProcess.spawn(
      'start',
      {
        SWITCHBOARD_HTTP_PORT: '0',
        REDIS_URL: redis.url,
        DATABASE_URL: pgdb.url,
        SWITCHBOARD_API_KEYS: API_KEY,
        OPENAI_BASE_URL: fake.openaiBaseUrl,
        OPENAI_API_KEY: 'fake-key',
        SWITCHBOARD_MODEL: 'fake-model',
      },
      { startTimeoutMs: 120_000 },
    );
    const answer = await fetch(`${proc.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'hello' }] }),
    }).then((r) => r.json() as Promise<{ choices: { message: { content: string } }[] }>);
    expect(answer.choices[0]!.message.content).toBe('echo: hello');
    await redis.stop();
    await new Promise((r) => setTimeout(r, 500)); // its clients are reconnecting by now
    expect(await proc.kill('SIGTERM')).toBe(0);
    expect(proc.logs.filter((l) => /shut down cleanly|shutdown deadline/.test(l)).map((l) => JSON.parse(l).msg)).toEqual(['shut down cleanly']);
  }, 120_000);
});
