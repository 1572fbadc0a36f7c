/**
 * Two ingress processes (here: two gateways on the same Redis and Postgres)
 * configured with the same mailbox: one polls, the other stands by and takes
 * over when the first goes away. Every mail is answered exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import type { Config } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { authResults, TestMailbox } from './fakes/email-mailbox.js';
import { SmtpSink } from './fakes/email-smtp.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { type Dovecot, startDovecot } from './support/dovecot.js';
import { eventually, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const BOT = 'bot@example.test';

describe('email with two ingress processes', () => {
  let dovecot: Dovecot;
  let sink: SmtpSink;
  let fake: FakeLlm;
  let mailbox: TestMailbox;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let cfg: Config;
  const gws: Gateway[] = [];

  const start = async () => {
    const gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), {
      ...process.env,
      EMAIL_IMAP_PASSWORD: dovecot.password,
    });
    gws.push(gw);
    return gw;
  };
  const health = (gw: Gateway) => gw.channels.find((c) => c.name === 'email')!.listener!.health();

  beforeAll(async () => {
    dovecot = await startDovecot({ user: BOT, password: 'imap-secret-2' });
    sink = new SmtpSink();
    await sink.start();
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`re: ${lastUserText(req.body).split('\n').pop()}`));
    mailbox = await TestMailbox.open(dovecot);
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    cfg = testConfig(
      fake,
      { redisUrl: redis.url, databaseUrl: pgdb.url },
      {
        channels: {
          email: {
            address: BOT,
            imap: { host: dovecot.host, port: dovecot.port, secure: false, user: dovecot.user },
            smtp: { host: '127.0.0.1', port: sink.port, auth: false, retry: { attempts: 3, minMs: 50, maxMs: 200 } },
            reconnect: { minMs: 100, maxMs: 1_000 },
            lease: { ttlMs: 2_000, settleMs: 50 },
          },
        },
        access: { email: { policy: 'open' } },
      },
    );
  });

  afterAll(async () => {
    for (const gw of gws) await gw.close().catch(() => {});
    await mailbox?.close();
    await fake?.close();
    await sink?.close();
    await redis?.stop();
    await pgdb?.drop();
    await dovecot?.stop();
  });

  it('polls the mailbox from one process only, and fails over', async () => {
    const a = await start();
    await eventually(async () => health(a).message?.startsWith('watching'));
    const b = await start();
    await new Promise((r) => setTimeout(r, 500));
    expect(health(b)).toEqual({ ok: true, message: 'standby: another process polls this mailbox' });

    const sent = [];
    for (let i = 1; i <= 5; i++)
      sent.push(await mailbox.deliver({ from: `user${i}@example.com`, subject: `question ${i}`, text: `q${i}`, headers: [authResults('example.com', true)] }));
    for (const m of sent) await eventually(async () => sink.mails.some((r) => r.inReplyTo === m.messageId));

    // The poller goes away: the other takes over once its lease runs out.
    await a.close();
    gws.splice(gws.indexOf(a), 1);
    const late = await mailbox.deliver({ from: 'late@example.com', subject: 'late', text: 'still answered?', headers: [authResults('example.com', true)] });
    await eventually(async () => sink.mails.some((r) => r.inReplyTo === late.messageId), 20_000);
    expect(health(b).message).toMatch(/^watching/);
    await new Promise((r) => setTimeout(r, 1_000));
    for (const m of [...sent, late]) expect(sink.mails.filter((r) => r.inReplyTo === m.messageId)).toHaveLength(1);
  });
});
