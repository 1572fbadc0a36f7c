/**
 * Human takeover on email (issue #26), end to end: a real IMAP server (a private Dovecot), mail
 * delivered into it by IMAP APPEND, mail sent to an SMTP sink, a real gateway and the fake model.
 * An operator (approvals.operators.email, authenticated by the receiving server's
 * Authentication-Results) replying on a user's thread takes the conversation over: written to the
 * bot alone, their reply (quoted history stripped) is mailed to the user in the thread; written to
 * the user too (reply-all), it is only recorded. The user's replies are recorded and forwarded to
 * the operator in the thread, the agent is silent; "handback: <note>" returns the thread to the
 * agent, with all of it in context. Attack:
 * an unauthenticated From: the operator takes nothing over and reaches nobody.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import type { Config } from '../src/config.js';
import { NOTICE } from '../src/handoffs/text.js';
import { createLogger } from '../src/log.js';
import { authResults, TestMailbox } from './fakes/email-mailbox.js';
import { type SentMail, SmtpSink } from './fakes/email-smtp.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { type Dovecot, startDovecot } from './support/dovecot.js';
import { eventually, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

const BOT = 'bot@example.test';
const ALICE = 'alice@example.com';
const BOB = 'bob@example.com';
const CAROL = 'carol@example.com';
const OPERATOR = 'olga@support.example.org';

describe('human takeover on email (Dovecot + SMTP sink)', () => {
  let dovecot: Dovecot;
  let sink: SmtpSink;
  let llm: FakeLlm;
  let mailbox: TestMailbox;
  let cfg: Config;
  let gw: Gateway;

  const mailsTo = (to: string): SentMail[] => sink.mails.filter((m) => m.to === to);
  const replyTo = (messageId: string) => eventually(async () => sink.mails.find((m) => m.inReplyTo === messageId), 20_000);
  const api = (method: string, path: string) => fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
  const transcript = async (id: string) =>
    ((await (await api('GET', `/v1/conversations/${id}/messages`)).json()) as any).data as Array<{ role: string; content: string; author?: string }>;
  const handoffOf = async (id: string) =>
    (((await (await api('GET', '/v1/handoffs')).json()) as any).data as Array<{ conversation: string; state: string; operator: string | null }>).find(
      (h) => h.conversation === id,
    );
  const conversationOf = async (user: string) =>
    (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'email' and key like $1`, [`email/${BOT}/${user}/%`])).rows[0]!
      .id;
  const operatorMail = (m: {
    subject: string;
    text: string;
    parent: SentMail;
    to?: string[];
    pass?: boolean;
    from?: string;
    headers?: Array<[string, string]>;
  }) =>
    mailbox.deliver({
      from: m.from ?? OPERATOR,
      fromName: 'Olga (Support)',
      to: m.to ?? [BOT],
      subject: m.subject,
      text: m.text,
      inReplyTo: m.parent.messageId,
      references: [...m.parent.references, m.parent.messageId],
      headers: m.headers ?? [authResults('support.example.org', m.pass ?? true)],
    });
  const settle = () => new Promise((r) => setTimeout(r, 1_500));

  beforeAll(async () => {
    dovecot = await startDovecot({ user: BOT, password: 'imap-secret-tko' });
    sink = new SmtpSink();
    await sink.start();
    llm = new FakeLlm();
    await llm.start();
    llm.respond((req) => reply(`agent: ${lastUserText(req.body).split('\n').pop()}`));
    mailbox = await TestMailbox.open(dovecot);
    cfg = testConfig(
      llm,
      {},
      {
        channels: {
          email: {
            address: BOT,
            name: 'Switchboard Bot',
            imap: { host: dovecot.host, port: dovecot.port, secure: false, user: dovecot.user },
            smtp: { host: '127.0.0.1', port: sink.port, auth: false, retry: { attempts: 4, minMs: 50, maxMs: 200 } },
            requireAuthenticatedSender: true,
            // Unauthenticated mail reaches the ingress (as unverified:<address>): the attack below is then about the takeover itself.
            allowUnauthenticatedSenders: true,
            authServId: 'mx.example.test',
            reconnect: { minMs: 100, maxMs: 1_000 },
            lease: { ttlMs: 3_000, settleMs: 20 },
          },
        },
        access: { email: { policy: 'open' } },
        approvals: { operators: { email: [OPERATOR] } },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, EMAIL_IMAP_PASSWORD: dovecot.password });
    await eventually(async () => gw.channels.find((c) => c.name === 'email')!.listener!.health().ok, 15_000);
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    await mailbox?.close();
    await llm?.close();
    await sink?.close();
    await dovecot?.stop();
  });

  it("an operator's reply to the bot takes the thread over and is mailed to the user; handback resumes the agent", async () => {
    const first = await mailbox.deliver({ from: ALICE, subject: 'Order 77', text: 'Where is my order 77?', headers: [authResults('example.com', true)] });
    const r1 = await replyTo(first.messageId);
    expect(r1.to).toBe(ALICE);
    const id = await conversationOf(ALICE);

    // Olga replies on the thread, to the bot alone, quoting it: the conversation is hers, and Alice gets her words (not the quote) from the bot.
    const asked = llm.requests.length;
    await operatorMail({
      parent: r1,
      subject: 'Re: Order 77',
      text: `Hi Alice, Olga here. I am re-sending order 77 today.\n\nOn Mon, 1 Jan 2024, Switchboard Bot <${BOT}> wrote:\n> agent: Where is my order 77?`,
    });
    const relayed = await eventually(async () => mailsTo(ALICE).find((m) => m.text.includes('Olga here')), 20_000);
    expect(relayed.text).not.toContain('> agent:');
    expect(relayed.references[0]).toBe(first.messageId); // in Alice's thread
    expect(await handoffOf(id)).toMatchObject({ state: 'taken', operator: `email:${OPERATOR}` });
    expect((await transcript(id)).find((m) => m.role === 'operator')).toMatchObject({
      content: 'Hi Alice, Olga here. I am re-sending order 77 today.',
      author: `email:${OPERATOR}`,
    });

    // Alice answers: recorded as hers, told once a person has it; the agent is not asked.
    await mailbox.deliver({
      from: ALICE,
      subject: 'Re: Order 77',
      text: 'Thanks! Which carrier?',
      inReplyTo: relayed.messageId,
      references: [...relayed.references, relayed.messageId],
      headers: [authResults('example.com', true)],
    });
    await eventually(async () => mailsTo(ALICE).some((m) => m.text.includes(NOTICE.taken.slice(0, 40))), 20_000);
    expect((await transcript(id)).find((m) => m.content.includes('Which carrier?'))).toMatchObject({ role: 'user', author: `email:${ALICE}` });
    expect(llm.requests.length).toBe(asked);
    // Olga was no recipient of it: the bot forwards it to her in the thread.
    const forwarded = await eventually(async () => mailsTo(OPERATOR).find((m) => m.text.includes('Which carrier?')), 20_000);
    expect(forwarded.text).toContain(ALICE);
    expect(forwarded.references[0]).toBe(first.messageId);

    // Handback by mail, replying to the forwarded one: confirmed to Olga; Alice's next mail is the agent's again, with everything in context.
    await operatorMail({ parent: forwarded, subject: 'Re: Order 77', text: 'handback: re-sent order 77 with DHL\n\n-- \nOlga, ACME support' });
    await eventually(async () => mailsTo(OPERATOR).some((m) => m.text.includes('Handed back')), 20_000);
    expect(await handoffOf(id)).toBeUndefined();
    await mailbox.deliver({
      from: ALICE,
      subject: 'Re: Order 77',
      text: 'great, thank you',
      inReplyTo: relayed.messageId,
      references: [...relayed.references, relayed.messageId],
      headers: [authResults('example.com', true)],
    });
    await eventually(async () => mailsTo(ALICE).some((m) => m.text.includes('agent: great, thank you')), 20_000);
    const prompt = JSON.stringify(llm.requests.at(-1)!.body.messages);
    for (const s of ['I am re-sending order 77 today.', 'Which carrier?', 're-sent order 77 with DHL']) expect(prompt).toContain(s);
    expect(prompt).toContain(`An operator (email:${OPERATOR}) handled this conversation`);
    expect(prompt).not.toContain('ACME support');
  });

  it("a reply-all the user received is recorded as the operator's and not mailed to them again", async () => {
    const first = await mailbox.deliver({ from: BOB, subject: 'Invoice', text: 'Please resend my invoice.', headers: [authResults('example.com', true)] });
    const r1 = await replyTo(first.messageId);
    const id = await conversationOf(BOB);
    const before = mailsTo(BOB).length;
    await operatorMail({ parent: r1, to: [BOB, BOT], subject: 'Re: Invoice', text: 'Bob, I attached it by hand just now.' });
    await eventually(async () => (await transcript(id)).find((m) => m.role === 'operator' && m.content === 'Bob, I attached it by hand just now.'), 20_000);
    expect(await handoffOf(id)).toMatchObject({ state: 'taken', operator: `email:${OPERATOR}` });
    await settle();
    expect(mailsTo(BOB)).toHaveLength(before);
    expect((await api('POST', `/v1/conversations/${id}/handback`)).status).toBe(200);
  });

  it('attack: an unauthenticated From: the operator takes nothing over, reaches no user and gets no reply', async () => {
    const first = await mailbox.deliver({ from: CAROL, subject: 'Refund', text: 'Can I get a refund?', headers: [authResults('example.com', true)] });
    const r1 = await replyTo(first.messageId);
    const id = await conversationOf(CAROL);
    const toCarol = mailsTo(CAROL).length;
    const toOperator = mailsTo(OPERATOR).length;
    const forged = [
      await operatorMail({ parent: r1, pass: false, subject: 'Re: Refund', text: 'takeover' }),
      await operatorMail({ parent: r1, pass: false, to: [BOT, CAROL], subject: 'Re: Refund', text: 'handback' }),
    ];
    // Both were handled (flagged by the listener) before anything is asserted.
    for (const m of forged) await eventually(async () => (await mailbox.flags(m.uid)).includes('$SwitchboardSeen'), 20_000);
    await settle();
    expect(await handoffOf(id)).toBeUndefined();
    expect(mailsTo(CAROL)).toHaveLength(toCarol);
    // The refusals are not mailed to a From nobody vouched for (backscatter).
    expect(mailsTo(OPERATOR)).toHaveLength(toOperator);
    expect((await transcript(id)).some((m) => m.role === 'operator' || m.content === 'takeover')).toBe(false);

    // The forger writes its own Authentication-Results of our authserv-id (a pass) under the server's fail: only the
    // topmost counts, so the From stays unverified (its own conversation with the agent), never Carol's operator.
    const spoof = await operatorMail({
      parent: r1,
      headers: [authResults('support.example.org', false), authResults('support.example.org', true)],
      subject: 'Re: Refund',
      text: 'I have this one now: your refund is refused.',
    });
    await eventually(async () => (await mailbox.flags(spoof.uid)).includes('$SwitchboardSeen'), 20_000);
    await settle();
    expect(await handoffOf(id)).toBeUndefined();
    expect(mailsTo(CAROL)).toHaveLength(toCarol);
    expect((await transcript(id)).some((m) => m.role === 'operator' || m.content.includes('refund is refused'))).toBe(false);
    expect(llm.requests.some((r) => lastUserText(r.body).includes('takeover'))).toBe(false);
  });
});
