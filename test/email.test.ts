/**
 * The email channel end to end: a real IMAP server (a private Dovecot), mail
 * delivered into it by IMAP APPEND, replies captured by an SMTP sink, a real
 * gateway and the fake LLM.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import type { Config } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { authResults, newMessageId, TestMailbox } from './fakes/email-mailbox.js';
import { type SentMail, SmtpSink } from './fakes/email-smtp.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { type Dovecot, startDovecot } from './support/dovecot.js';
import { eventually, testConfig } from './support/gateway.js';

const BOT = 'bot@example.test';
const ALICE = 'alice@example.com';
const OPERATOR = 'op@example.com';

/** The fake model: runs "run: <cmd>" through shell_exec, reports tool results, otherwise echoes and counts the user's messages. */
function model(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 200)}`);
  const text = lastUserText(req.body);
  const m = /run: (.+)$/m.exec(text);
  if (m) return toolCall('shell_exec', { command: m[1]!.trim() });
  const seen = msgs.filter((x) => x.role === 'user').length;
  return reply(`You said: ${text.split('\n').pop()}. Message **${seen}** of this thread; try \`ls\` <b>now</b>.`);
}

describe('email channel (Dovecot + SMTP sink)', () => {
  let dovecot: Dovecot;
  let sink: SmtpSink;
  let fake: FakeLlm;
  let mailbox: TestMailbox;
  let cfg: Config;
  let gw: Gateway | undefined;

  const start = async (c: Config = cfg) => {
    gw = await Gateway.start(c, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, EMAIL_IMAP_PASSWORD: dovecot.password });
    await eventually(async () => gw!.channels.find((c) => c.name === 'email')!.listener!.health().ok, 15_000);
  };
  const stop = async () => {
    await gw?.close();
    gw = undefined;
  };
  const repliesTo = (messageId: string): SentMail[] => sink.mails.filter((m) => m.inReplyTo === messageId);
  const replyTo = (messageId: string, timeoutMs = 15_000) => eventually(async () => repliesTo(messageId)[0], timeoutMs);
  const userTexts = () => fake.requests.map((r) => lastUserText(r.body));

  beforeAll(async () => {
    dovecot = await startDovecot({ user: BOT, password: 'imap-secret-1' });
    sink = new SmtpSink();
    await sink.start();
    fake = new FakeLlm();
    await fake.start();
    fake.respond(model);
    mailbox = await TestMailbox.open(dovecot);
    cfg = testConfig(
      fake,
      {},
      {
        channels: {
          email: {
            address: BOT,
            name: 'Switchboard Bot',
            imap: { host: dovecot.host, port: dovecot.port, secure: false, user: dovecot.user },
            smtp: { host: '127.0.0.1', port: sink.port, auth: false, retry: { attempts: 4, minMs: 50, maxMs: 200 } },
            requireAuthenticatedSender: true,
            authServId: 'mx.example.test',
            reconnect: { minMs: 100, maxMs: 1_000 },
            lease: { ttlMs: 3_000, settleMs: 20 },
          },
        },
        access: { email: { policy: 'open' } },
        approvals: { operators: { email: [OPERATOR] }, timeoutMs: 60_000 },
      },
    );
    await start();
  });

  afterAll(async () => {
    await stop();
    await mailbox?.close();
    await fake?.close();
    await sink?.close();
    await dovecot?.stop();
  });

  it('answers a mail in its thread, and a reply to our reply continues the same conversation', async () => {
    sink.failNext(451); // the first send is refused for now: retried
    const attemptsBefore = sink.attempts;
    const first = await mailbox.deliver({
      from: ALICE,
      fromName: 'Alice',
      subject: 'Hello bot',
      text: 'What is 2+2?\n\n-- \nAlice Example\nACME Corp',
      headers: [authResults('example.com', true)],
    });
    const r1 = await replyTo(first.messageId);
    expect(r1.to).toBe(ALICE);
    expect(r1.subject).toBe('Re: Hello bot');
    expect(r1.references).toEqual([first.messageId]);
    expect(r1.parsed.from?.value[0]?.address).toBe(BOT);
    expect(r1.header('x-switchboard')).toMatch(/^turn=/);
    expect(r1.header('auto-submitted')).toBe('auto-replied');
    expect(r1.text).toContain('Message **1** of this thread');
    expect(r1.html).toContain('<strong>1</strong>');
    expect(r1.html).toContain('<code');
    expect(r1.html).toContain('&lt;b&gt;now&lt;/b&gt;'); // the model's HTML is escaped
    expect(r1.html).not.toContain('<b>now</b>');
    expect(sink.attempts - attemptsBefore).toBe(2); // 451, then sent
    expect(repliesTo(first.messageId)).toHaveLength(1);
    // The model saw the question (and the subject of a new thread), not the signature.
    const asked = userTexts().find((t) => t.includes('What is 2+2?'))!;
    expect(asked).toContain('Subject: Hello bot');
    expect(asked).not.toContain('ACME');

    const second = await mailbox.deliver({
      from: ALICE,
      subject: `Re: ${r1.subject}`,
      text: `And 3+3?\n\nOn Mon, 1 Jan 2024 at 10:00, Switchboard Bot <${BOT}> wrote:\n> You said: What is 2+2?. Message 1 of this thread.\n> more quoted`,
      inReplyTo: r1.messageId,
      references: [...r1.references, r1.messageId],
      headers: [authResults('example.com', true)],
    });
    const r2 = await replyTo(second.messageId);
    expect(r2.subject).toBe('Re: Hello bot'); // not "Re: Re: …"
    expect(r2.references).toEqual([first.messageId, r1.messageId, second.messageId]);
    expect(r2.text).toContain('You said: And 3+3?');
    expect(r2.text).toContain('Message **2** of this thread'); // same conversation: the first exchange is in the history
    expect(userTexts()).toContain('And 3+3?'); // quoted history removed
    const convs = await gw!.infra.store.db.query<{ key: string }>(`select key from conversations where channel = 'email'`);
    expect(convs.rows.filter((c) => c.key.includes(ALICE))).toHaveLength(1);
    // Handled mail is marked in the mailbox.
    expect(await mailbox.flags(first.uid)).toEqual(expect.arrayContaining(['$SwitchboardSeen', '\\Seen']));
  });

  it('never answers auto-replies, bounces, bulk mail or our own mail', async () => {
    const before = fake.requests.length;
    const robots = [
      { from: ALICE, subject: 'Out of office', text: 'I am away (auto)', headers: [['Auto-Submitted', 'auto-replied'] as [string, string]] },
      { from: 'news@example.com', subject: 'Weekly news', text: 'bulk text', headers: [['Precedence', 'bulk'] as [string, string]] },
      { from: 'list@example.com', subject: 'list post', text: 'list text', headers: [['List-Id', '<dev.example.com>'] as [string, string]] },
      { from: 'MAILER-DAEMON@example.com', subject: 'Undelivered Mail Returned to Sender', text: 'bounce text' },
      { from: 'noreply@example.com', subject: 'Your receipt', text: 'receipt text' },
      { from: ALICE, subject: 'vacation', text: 'autoreply text', headers: [['X-Autoreply', 'yes'] as [string, string]] },
      { from: ALICE, subject: 'bounce', text: 'null sender text', headers: [['Return-Path', '<>'] as [string, string]] },
      { from: BOT, subject: 'Re: Hello bot', text: 'our own text' },
      { from: 'mallory@example.com', subject: 'Re: x', text: 'tagged text', headers: [['X-Switchboard', 'turn=t_1'] as [string, string]] },
    ];
    const ids: Array<{ messageId: string; uid: number }> = [];
    for (const r of robots) ids.push(await mailbox.deliver(r));
    // A person's mail after them: once it is answered, the robots' mail has been handled.
    const person = await mailbox.deliver({ from: ALICE, subject: 'A real question', text: 'Are you there?', headers: [authResults('example.com', true)] });
    await replyTo(person.messageId);
    for (const { messageId, uid } of ids) {
      expect(repliesTo(messageId)).toHaveLength(0);
      expect(await mailbox.flags(uid)).toContain('$SwitchboardSeen');
    }
    const seen = fake.requests.slice(before).map((r) => lastUserText(r.body));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain('Are you there?');
  });

  it('takes an approval by email from an authenticated operator, and refuses a forged one', async () => {
    const ask = await mailbox.deliver({
      from: ALICE,
      subject: 'Please run',
      text: 'run: echo approved-by-mail >> mail.txt',
      headers: [authResults('example.com', true)],
    });
    const request = await replyTo(ask.messageId);
    // Alice may not approve her own request (she is no operator): she is told who can.
    const code = /An operator must approve this \(code ([A-Z0-9]{5})\)/.exec(request.text)?.[1];
    expect(code, request.text).toBeTruthy();
    expect(request.text.match(/An operator must approve/g)).toHaveLength(1); // asked once, not twice
    expect(request.text).not.toContain('Reply YES');
    const approvals = gw!.infra.approvals;

    // Forged: the From is the operator's, but the receiving server says DKIM and SPF failed (a header
    // the forger added claiming "pass" under another authserv-id does not count).
    const forged = await mailbox.deliver({
      from: OPERATOR,
      subject: `Re: ${request.subject}`,
      text: `YES ${code}`,
      inReplyTo: request.messageId,
      references: [...request.references, request.messageId],
      headers: [authResults('example.com', false), authResults('example.com', true, 'evil.example')],
    });
    // Not answered at all (a reply to a forged From is backscatter), and the code stays pending.
    const unauthenticated = await mailbox.deliver({
      from: OPERATOR,
      subject: `Re: ${request.subject}`,
      text: `YES ${code}`,
      inReplyTo: request.messageId,
      headers: [],
    });
    const marker = await mailbox.deliver({ from: ALICE, subject: 'after the forgeries', text: 'still here?', headers: [authResults('example.com', true)] });
    await replyTo(marker.messageId); // mail is read in order: the forgeries were read before this was answered
    expect(repliesTo(forged.messageId)).toEqual([]);
    expect(repliesTo(unauthenticated.messageId)).toEqual([]);
    expect((await approvals.byCode(code!))!.status).toBe('pending');

    // Authentic: the operator answers YES on the first line, above the quoted request.
    const yes = await mailbox.deliver({
      from: OPERATOR,
      subject: `Re: ${request.subject}`,
      text: `yes ${code}\n\nOn Tue, 2 Jan 2024, Switchboard Bot <${BOT}> wrote:\n> ${request.text.split('\n').join('\n> ')}`,
      inReplyTo: request.messageId,
      references: [...request.references, request.messageId],
      headers: [authResults('example.com', true)],
    });
    const ok = await replyTo(yes.messageId);
    expect(ok.text).toContain(`${code} approved by ${OPERATOR}`);
    // The parked turn resumes and answers the requester, in her thread.
    const done = await eventually(async () => repliesTo(ask.messageId).find((m) => m.text.includes('tool said')));
    expect(done.text).toContain('exit code 0');
    expect(done.references).toEqual([ask.messageId]);
    expect(await approvals.byCode(code!)).toMatchObject({ status: 'executed', decidedVia: 'email' });
    expect(repliesTo(ask.messageId)).toHaveLength(2); // the request, then the answer
  });

  it('reconnects (a new connection) after the IMAP server drops it', async () => {
    await dovecot.restart();
    const after = await mailbox
      .deliver({ from: ALICE, subject: 'after restart', text: 'still there?', headers: [authResults('example.com', true)] })
      .catch(async () => {
        mailbox = await TestMailbox.open(dovecot);
        return mailbox.deliver({ from: ALICE, subject: 'after restart', text: 'still there?', headers: [authResults('example.com', true)] });
      });
    const r = await replyTo(after.messageId, 20_000);
    expect(r.text).toContain('still there?');
  });

  it('a restart in the middle neither misses mail nor answers any twice', async () => {
    const a = await mailbox.deliver({ from: ALICE, subject: 'restart 1', text: 'one', headers: [authResults('example.com', true)] });
    await replyTo(a.messageId);
    // Mail arriving as the gateway stops, and while it is down.
    const b = await mailbox.deliver({ from: ALICE, subject: 'restart 2', text: 'two', headers: [authResults('example.com', true)] });
    await stop();
    const c = await mailbox.deliver({ from: ALICE, subject: 'restart 3', text: 'three', headers: [authResults('example.com', true)] });
    const d = await mailbox.deliver({
      from: ALICE,
      subject: 'restart 4',
      text: 'four',
      inReplyTo: newMessageId(),
      headers: [authResults('example.com', true)],
    });
    await start();
    for (const m of [b, c, d]) await replyTo(m.messageId, 20_000);
    await new Promise((r) => setTimeout(r, 1_500)); // time for a duplicate to show up, if there were one
    for (const m of [a, b, c, d]) expect(repliesTo(m.messageId)).toHaveLength(1);
    // Nothing older was answered again either.
    const counts = new Map<string, number>();
    for (const m of sink.mails) if (m.inReplyTo) counts.set(m.inReplyTo, (counts.get(m.inReplyTo) ?? 0) + 1);
    expect([...counts.values()].filter((n) => n > 2)).toEqual([]);
  });

  it('answers unauthenticated senders only when allowed, and then as unverified: never as the address they claim', async () => {
    await stop();
    const email = cfg.channels.email as Record<string, unknown>;
    await start({ ...cfg, channels: { email: { ...email, allowUnauthenticatedSenders: true } } });
    const m = await mailbox.deliver({ from: OPERATOR, subject: 'no DKIM here', text: 'who am I?', headers: [] });
    const r = await replyTo(m.messageId);
    expect(r.to).toBe(OPERATOR);
    const senders = (
      await gw!.infra.store.db.query<{ id: string }>(`select sender->>'id' as id from inbox where channel = 'email' and text like '%who am I?%'`)
    ).rows.map((x) => x.id);
    expect(senders).toEqual([`unverified:${OPERATOR}`]);
    await stop();
    await start();
  });

  it('moves processed mail to a folder when configured so', async () => {
    await stop();
    const email = cfg.channels.email as Record<string, unknown>;
    await start({ ...cfg, channels: { email: { ...email, processed: { action: 'move', folder: 'Processed' } } } });
    const m = await mailbox.deliver({ from: ALICE, subject: 'move me', text: 'file this', headers: [authResults('example.com', true)] });
    await replyTo(m.messageId);
    await eventually(async () => !(await mailbox.messageIds('INBOX')).includes(m.messageId));
    expect(await mailbox.messageIds('Processed')).toEqual([m.messageId]);
  });
});
