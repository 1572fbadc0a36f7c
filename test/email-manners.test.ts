/**
 * Group-chat manners on email, end to end: mail to several people delivered into a real Dovecot,
 * replies captured by the SMTP sink, a real gateway and the fake LLM. A group mail not addressed
 * to the bot is marked handled and gets no reply and no model request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { createLogger } from '../src/log.js';
import { authResults, TestMailbox } from './fakes/email-mailbox.js';
import { type SentMail, SmtpSink } from './fakes/email-smtp.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { type Dovecot, startDovecot } from './support/dovecot.js';
import { eventually, testConfig } from './support/gateway.js';

const BOT = 'bot@example.test';
const ALICE = 'alice@example.com';
const BOB = 'bob@example.com';
const CAROL = 'carol@example.com';

describe('email manners (Dovecot + SMTP sink)', () => {
  let dovecot: Dovecot;
  let sink: SmtpSink;
  let fake: FakeLlm;
  let mailbox: TestMailbox;
  let gw: Gateway | undefined;

  const repliesTo = (messageId: string): SentMail[] => sink.mails.filter((m) => m.inReplyTo === messageId);
  const replyTo = (messageId: string) => eventually(async () => repliesTo(messageId)[0], 20_000);
  const asked = (text: string) => fake.requests.filter((r) => lastUserText(r.body).includes(text)).length;
  const auth = [authResults('example.com', true)];

  /** Delivers a mail that must be left alone; waits until it is marked handled, then checks nothing was sent or asked. */
  async function silent(spec: Parameters<TestMailbox['deliver']>[0], marker: string): Promise<void> {
    const m = await mailbox.deliver(spec);
    await eventually(async () => (await mailbox.flags(m.uid)).includes('$SwitchboardSeen'), 20_000);
    expect(repliesTo(m.messageId)).toEqual([]);
    expect(asked(marker)).toBe(0);
    const rows = await gw!.infra.store.db.query(`select 1 from inbox where channel = 'email' and external_id = $1`, [m.messageId]);
    expect(rows.rows).toHaveLength(0);
  }

  beforeAll(async () => {
    dovecot = await startDovecot({ user: BOT, password: 'imap-secret-2' });
    sink = new SmtpSink();
    await sink.start();
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`You said: ${lastUserText(req.body).split('\n').pop()}`));
    mailbox = await TestMailbox.open(dovecot);
    const cfg = testConfig(
      fake,
      {},
      {
        channels: {
          email: {
            address: BOT,
            name: 'Switchboard',
            imap: { host: dovecot.host, port: dovecot.port, secure: false, user: dovecot.user },
            smtp: { host: '127.0.0.1', port: sink.port, auth: false, retry: { attempts: 4, minMs: 50, maxMs: 200 } },
            authServId: 'mx.example.test',
            reconnect: { minMs: 100, maxMs: 1_000 },
            lease: { ttlMs: 3_000, settleMs: 20 },
          },
        },
        access: { email: { policy: 'open' } },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, EMAIL_IMAP_PASSWORD: dovecot.password });
    await eventually(async () => gw!.channels.find((c) => c.name === 'email')!.listener!.health().ok, 30_000);
  }, 240_000);

  afterAll(async () => {
    await gw?.close();
    await mailbox?.close();
    await fake?.close();
    await sink?.close();
    await dovecot?.stop();
  });

  it('a group mail with the bot in To is answered; with the bot only in Cc and others in To it is not', async () => {
    const toBot = await mailbox.deliver({ from: ALICE, to: [BOT, BOB], subject: 'Plans', text: 'What is on the agenda?', headers: auth });
    const r1 = await replyTo(toBot.messageId);
    expect(r1.text).toContain('What is on the agenda?');
    await silent({ from: ALICE, to: [BOB], cc: [BOT, CAROL], subject: 'Lunch', text: 'Bob, lunch at noon?', headers: auth }, 'lunch at noon');
  });

  it('a reply to our mail is for us unless its To names others and not us; reply-all between people is silent', async () => {
    const root = await mailbox.deliver({ from: ALICE, to: [BOT, BOB], subject: 'Budget', text: 'Draft the budget please', headers: auth });
    const ours = await replyTo(root.messageId);
    const refs = [root.messageId, ours.messageId];
    const toUs = await mailbox.deliver({
      from: BOB,
      to: [BOT],
      cc: [ALICE],
      subject: 'Re: Budget',
      text: 'Add travel costs',
      inReplyTo: ours.messageId,
      references: refs,
      headers: auth,
    });
    expect((await replyTo(toUs.messageId)).text).toContain('Add travel costs');
    // Bob answers Alice in the same thread, the bot in Cc: not for the bot.
    await silent(
      {
        from: BOB,
        to: [ALICE],
        cc: [BOT],
        subject: 'Re: Budget',
        text: 'Alice, are you fine with the numbers',
        inReplyTo: root.messageId,
        references: [root.messageId],
        headers: auth,
      },
      'are you fine with the numbers',
    );
  });

  it("the bot's name at a line start addresses it even in Cc", async () => {
    const named = await mailbox.deliver({
      from: CAROL,
      to: [ALICE, BOB],
      cc: [BOT],
      subject: 'Numbers',
      text: 'Hi both,\nSwitchboard, what were last month totals',
      headers: auth,
    });
    expect((await replyTo(named.messageId)).text).toContain('what were last month totals');
  });

  it('a one-to-one mail is answered as before', async () => {
    const direct = await mailbox.deliver({ from: ALICE, subject: 'Solo', text: 'Just me asking', headers: auth });
    expect((await replyTo(direct.messageId)).text).toContain('Just me asking');
  });
});
