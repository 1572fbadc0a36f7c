/**
 * The sms channel scaled out (Redis + Postgres): the webhooks reach an ingress
 * that runs no deliverer, the answers leave from a separate worker. Opt-outs
 * written by the ingress (STOP) are honoured by the worker, and status
 * callbacks are recorded by the ingress.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { eventually, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const PUBLIC = 'https://bot.example.test';
const TWILIO_NUMBER = '+15550200000';
const USER = '+15550200001';

describe('sms channel with a separate ingress and worker', () => {
  let fake: FakeLlm;
  let tw: FakeTwilio;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let ingress: Gateway;
  let worker: Gateway;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const t = lastUserText(req.body);
      return t.startsWith('slow') ? reply('This answer is slow to come, one word at a time.', 100) : reply(`answer to ${t}`);
    });
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    const cfg = testConfig(
      fake,
      { redisUrl: redis.url, databaseUrl: pgdb.url },
      {
        channels: { sms: { accountSid: tw.accountSid, publicUrl: PUBLIC, apiBaseUrl: tw.url } },
        access: { sms: { policy: 'open' } },
      },
    );
    const env = { ...process.env, TWILIO_AUTH_TOKEN: tw.authToken };
    worker = await Gateway.start(cfg, { ingress: false, worker: true }, createLogger(cfg.log.level), env);
    ingress = await Gateway.start(cfg, { ingress: true, worker: false }, createLogger(cfg.log.level), env);
    tw.gatewayUrl = ingress.url!;
  });
  afterAll(async () => {
    await ingress?.close();
    await worker?.close();
    await tw?.close();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  const text = (body: string) => tw.webhook('/v1/channels/sms/inbound', tw.inboundParams({ from: USER, to: TWILIO_NUMBER, body }));
  const bodies = () => tw.sentTo(USER).map((m) => m.body);
  const rows = async (sql: string, params: unknown[]) => (await worker.infra.store.db.query<Record<string, any>>(sql, params)).rows;

  it('answers, records status callbacks, and honours STOP given to the ingress', async () => {
    expect((await text('hello')).status).toBe(200);
    await eventually(async () => bodies().length === 1);
    expect(bodies()).toEqual(['answer to hello']);
    const sid = tw.sentTo(USER)[0]!.sid;
    await eventually(async () => (await rows('select state from deliveries where target = $1', [`status:${sid}`]))[0]?.state === 'delivered');
    expect(ingress.channels.find((c) => c.name === 'sms')!.listener!.health()).toEqual({ ok: true });

    await text('slow please');
    await eventually(async () => fake.requests.some((r) => lastUserText(r.body) === 'slow please'));
    // Twilio sends its own STOP confirmation (keywordReplies: 'twilio' by default): we answer with empty TwiML.
    expect((await text('STOP')).body).toBe('<?xml version="1.0" encoding="UTF-8"?><Response></Response>');
    await eventually(async () =>
      (await rows(`select state from deliveries where target = $1 and turn_id <> 'optout'`, [USER])).some((r) => r.state === 'suppressed:opted_out'),
    );
    expect(bodies()).toEqual(['answer to hello']);

    await text('START');
    await text('again');
    await eventually(async () => bodies().length === 2);
    expect(bodies()).toEqual(['answer to hello', 'answer to again']);
  });
});
