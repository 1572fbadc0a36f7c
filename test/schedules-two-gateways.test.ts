/**
 * Two gateway processes' worth of ingress and worker (two Gateways) against one Redis and one
 * Postgres, each with its scheduler polling every 100 ms, and a schedule that ticks every second:
 * each tick is one run, one inbox message and one reply on the conversation's channel.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { sign } from '../kernel/hmac-signature.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { eventually, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const SECRET = 'schedules-two-gw-secret-0123456789';

describe('a schedule with two gateways on one Redis and Postgres', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  const gws: Gateway[] = [];
  let callback: Server;
  const received: Array<{ text: string; turn: string }> = [];
  beforeAll(async () => {
    process.env.SB_TWO_GW_SECRET = SECRET;
    callback = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(lastUserText(req.body).includes('Scheduled message') ? 'tick reply' : 'hello back'));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    const patch = {
      queue: { prefix: `sbs${Math.random().toString(36).slice(2, 8)}` },
      channels: {
        webhook: {
          hooks: [
            {
              name: 'crm',
              secretEnv: 'SB_TWO_GW_SECRET',
              callbackUrl: `http://127.0.0.1:${(callback.address() as AddressInfo).port}/cb`,
              allowCallbackCidrs: ['127.0.0.0/8'],
            },
          ],
        },
      },
      schedules: { pollMs: 100 },
    };
    for (let i = 0; i < 2; i++) gws.push(await startGateway(testConfig(fake, { redisUrl: redis.url, databaseUrl: pgdb.url }, patch)));
  }, 60_000);
  afterAll(async () => {
    for (const g of gws) await g.close();
    await fake?.close();
    await new Promise((r) => callback?.close(r));
    await redis?.stop();
    await pgdb?.drop();
    delete process.env.SB_TWO_GW_SECRET;
  });

  it('fires every tick exactly once', async () => {
    const [a, b] = gws as [Gateway, Gateway];
    const raw = JSON.stringify({ text: 'hi', conversation: 'ops', sender: 'crm' });
    const ts = Math.floor(Date.now() / 1000);
    const first = await fetch(`${a.url}/v1/webhooks/crm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-switchboard-timestamp': String(ts), 'x-switchboard-signature': sign(SECRET, ts, raw) },
      body: raw,
    });
    expect(first.status).toBe(202);
    await eventually(async () => received.length === 1);
    const conv = (await a.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'webhook'`)).rows[0]!.id;
    const post = await fetch(`${b.url}/v1/schedules`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ conversation: conv, cron: '* * * * * *', prompt: 'Say tick.' }),
    });
    expect(post.status).toBe(201);
    const { id } = (await post.json()) as { id: string };
    // At least two ticks fired (the 1-second cron, however slow a busy machine is), then the schedule goes.
    const fired = async () =>
      (await a.infra.store.db.query<{ n: string }>(`select count(*) as n from inbox where external_id like $1`, [`schedule:${id}:%`])).rows[0]!.n;
    await eventually(async () => Number(await fired()) >= 3, 20_000);
    await fetch(`${a.url}/v1/schedules/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
    const inbox = (await a.infra.store.db.query<{ external_id: string }>(`select external_id from inbox where external_id like $1`, [`schedule:${id}:%`])).rows;
    expect(inbox.length).toBeGreaterThanOrEqual(2);
    expect(new Set(inbox.map((r) => r.external_id)).size).toBe(inbox.length);
    // Every fired tick got its reply once (the drain may have answered two waiting ticks in one turn).
    const turns = await eventually(async () => {
      const t = (
        await a.infra.store.db.query<{ turn_id: string }>(`select distinct turn_id from inbox where external_id like $1 and turn_id is not null`, [
          `schedule:${id}:%`,
        ])
      ).rows;
      const replies = received.filter((r) => r.text === 'tick reply');
      return t.length && replies.length === t.length ? t : null;
    }, 10_000);
    await new Promise((r) => setTimeout(r, 500));
    const replies = received.filter((r) => r.text === 'tick reply');
    expect(replies.length).toBe(turns.length);
    expect(new Set(replies.map((r) => r.turn)).size).toBe(replies.length);
  }, 60_000);
});
