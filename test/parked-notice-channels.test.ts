/**
 * Issue #22 on the other channels: a message to a conversation whose turn is
 * parked on an approval is told at once that it waits (with the code), on the
 * platform itself — the Discord reply, the TwiML of the SMS webhook, a threaded
 * mail, the webhook's 202 — and is answered once an operator approves. Each
 * channel with its own fake and a real gateway (embedded); the approval is given
 * over the operator HTTP API (the channels' own ways are tested in their files).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { parseApprovalCustomId } from '../channels/discord/approvals.js';
import { sign } from '../kernel/hmac-signature.js';
import { createLogger } from '../src/log.js';
import type { FakeMessage } from './fakes/discord-server.js';
import { ALICE, APPROVE, startWorld, type World } from './fakes/discord-world.js';
import { authResults, TestMailbox } from './fakes/email-mailbox.js';
import { type SentMail, SmtpSink } from './fakes/email-smtp.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { type Dovecot, startDovecot } from './support/dovecot.js';
import { eventually, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

const WAITING = (code: string) => `Waiting for an operator to approve ${code} (tool shell_exec); your message will be answered after that.`;
/** "An operator must approve this (code K7Q4P)." in what the requester was shown. */
const codeIn = (text: string) => /\(code ([A-Z0-9]{5})\)/.exec(text)?.[1];

/** "run: <cmd>" becomes a caution-tier shell_exec (default autonomy asks); otherwise an echo. */
function model(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  if (msgs.at(-1)!.role === 'tool') return reply('tool said: done');
  const text = lastUserText(req.body);
  const run = /run: (.+)$/m.exec(text);
  return run ? toolCall('shell_exec', { command: run[1]!.trim() }) : reply(`you said: ${text.split('\n').pop()}`);
}

async function parkedOn(gw: Gateway, code: string): Promise<void> {
  await eventually(async () => (await gw.infra.approvals.byCode(code))?.status === 'pending', 20_000);
  await eventually(
    async () =>
      (await gw.infra.store.db.query(`select 1 from turns where status = 'parked' and id = (select turn_id from approvals where code = $1)`, [code])).rows
        .length > 0,
    20_000,
  );
}

async function approve(gw: Gateway, code: string): Promise<void> {
  const r = await fetch(`${gw.url}/v1/approvals/${code}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ decision: 'approve' }),
  });
  expect(r.status).toBe(200);
}

const llmSaw = (llm: FakeLlm, text: string) => llm.requests.some((r) => lastUserText(r.body).includes(text));

describe('discord: the waiting notice', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld();
  });
  afterAll(async () => {
    await w?.close();
  });
  const repliesTo = (messageId: string): FakeMessage[] => w.fake.botMessages(APPROVE).filter((m) => m.message_reference?.message_id === messageId);

  it('is posted as a reply at once; the message is answered after the approval', async () => {
    const first = w.fake.userMessage({ channelId: APPROVE, author: ALICE, content: 'run: touch x.txt' });
    const request = await eventually(async () => w.fake.botMessages(APPROVE).find((m) => m.components.length > 0), 20_000);
    const ids = (request.components as Array<{ components: Array<{ custom_id: string }> }>).flatMap((r) => r.components.map((c) => c.custom_id));
    const code = parseApprovalCustomId(ids[0]!)!.code;
    expect(request.content).toContain(`An operator must approve this (code ${code}).`);
    await parkedOn(w.gw, code);

    const started = Date.now();
    const second = w.fake.userMessage({ channelId: APPROVE, author: ALICE, content: 'are you still there?' });
    const notice = await eventually(async () => repliesTo(second)[0], 10_000);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(notice.content).toContain(WAITING(code));
    expect(llmSaw(w.primary, 'are you still there?')).toBe(false);

    await approve(w.gw, code);
    await w.answered(first);
    await w.answered(second);
    await eventually(async () => repliesTo(second).some((m) => /echo: are you still there\?/.test(m.content)), 20_000);
  });
});

describe('sms (Twilio): the waiting notice', () => {
  const PUBLIC = 'https://sms.example.test/hooks';
  const INBOUND = '/v1/channels/sms/inbound';
  const TWILIO_NUMBER = '+15550100000';
  const USER = '+15550100001';
  let llm: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;
  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    llm.respond(model);
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const cfg = testConfig(
      llm,
      {},
      {
        channels: { sms: { accountSid: tw.accountSid, authTokenEnv: 'SB_PN_TWILIO_TOKEN', publicUrl: PUBLIC, apiBaseUrl: tw.url } },
        access: { sms: { policy: 'allowlist', allow: [USER] } },
        approvals: { timeoutMs: 120_000 },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_PN_TWILIO_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
  });
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await llm?.close();
  });
  const text = (body: string) => tw.webhook(INBOUND, tw.inboundParams({ from: USER, to: TWILIO_NUMBER, body }));
  const bodies = () => tw.sentTo(USER).map((m) => m.body);

  it('is the TwiML reply of the webhook; the message is texted its answer after the approval', async () => {
    await text('run: touch x.txt');
    const request = await eventually(async () => bodies().find((b) => codeIn(b)), 20_000);
    const code = codeIn(request)!;
    await parkedOn(gw, code);

    const started = Date.now();
    const r = await text('are you still there?');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(r.status).toBe(200);
    expect(r.body).toContain(`<Message>${WAITING(code)}</Message>`);
    expect(llmSaw(llm, 'are you still there?')).toBe(false);

    await approve(gw, code);
    await eventually(async () => bodies().some((b) => /tool said: done/.test(b)), 20_000);
    await eventually(async () => bodies().some((b) => /you said: are you still there\?/.test(b)), 20_000);
  });
});

describe('email: the waiting notice', () => {
  const BOT = 'bot@example.test';
  const ALICE_MAIL = 'alice@example.com';
  let dovecot: Dovecot;
  let sink: SmtpSink;
  let llm: FakeLlm;
  let mailbox: TestMailbox;
  let gw: Gateway;
  beforeAll(async () => {
    dovecot = await startDovecot({ user: BOT, password: 'imap-secret-pn' });
    sink = new SmtpSink();
    await sink.start();
    llm = new FakeLlm();
    await llm.start();
    llm.respond(model);
    mailbox = await TestMailbox.open(dovecot);
    const cfg = testConfig(
      llm,
      {},
      {
        channels: {
          email: {
            address: BOT,
            imap: { host: dovecot.host, port: dovecot.port, secure: false, user: dovecot.user },
            smtp: { host: '127.0.0.1', port: sink.port, auth: false, retry: { attempts: 4, minMs: 50, maxMs: 200 } },
            requireAuthenticatedSender: true,
            authServId: 'mx.example.test',
            reconnect: { minMs: 100, maxMs: 1_000 },
            lease: { ttlMs: 3_000, settleMs: 20 },
          },
        },
        access: { email: { policy: 'open' } },
        approvals: { timeoutMs: 120_000 },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, EMAIL_IMAP_PASSWORD: dovecot.password });
    await eventually(async () => gw.channels.find((c) => c.name === 'email')!.listener!.health().ok, 15_000);
  });
  afterAll(async () => {
    await gw?.close();
    await mailbox?.close();
    await llm?.close();
    await sink?.close();
    await dovecot?.stop();
  });
  const repliesTo = (messageId: string): SentMail[] => sink.mails.filter((m) => m.inReplyTo === messageId);

  it('is a reply in the thread at once; the mail is answered after the approval', async () => {
    const first = await mailbox.deliver({ from: ALICE_MAIL, subject: 'Chores', text: 'run: touch x.txt', headers: [authResults('example.com', true)] });
    const request = await eventually(async () => repliesTo(first.messageId).find((m) => codeIn(m.text)), 20_000);
    const code = codeIn(request.text)!;
    await parkedOn(gw, code);

    const started = Date.now();
    const second = await mailbox.deliver({
      from: ALICE_MAIL,
      subject: `Re: ${request.subject}`,
      text: 'are you still there?',
      inReplyTo: request.messageId,
      references: [...request.references, request.messageId],
      headers: [authResults('example.com', true)],
    });
    const notice = await eventually(async () => repliesTo(second.messageId)[0], 15_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(notice.to).toBe(ALICE_MAIL);
    expect(notice.text).toContain(WAITING(code));
    expect(llmSaw(llm, 'are you still there?')).toBe(false);

    await approve(gw, code);
    await eventually(async () => repliesTo(first.messageId).some((m) => /tool said: done/.test(m.text)), 20_000);
    await eventually(async () => repliesTo(second.messageId).some((m) => /you said: are you still there\?/.test(m.text)), 20_000);
  });
});

describe('webhook: the waiting notice', () => {
  const SECRET = 'webhook-secret-parked-0001';
  let llm: FakeLlm;
  let gw: Gateway;
  let server: Server;
  const got: Array<{ body: any; headers: IncomingMessage['headers'] }> = [];
  beforeAll(async () => {
    process.env.SB_PN_HOOK_SECRET = SECRET;
    llm = new FakeLlm();
    await llm.start();
    llm.respond(model);
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (d) => (raw += d));
      req.on('end', () => {
        got.push({ body: JSON.parse(raw), headers: req.headers });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const callbackUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
    gw = await startGateway(
      testConfig(
        llm,
        {},
        {
          channels: {
            webhook: { hooks: [{ name: 'crm', secretEnv: 'SB_PN_HOOK_SECRET', callbackUrl, allowCallbackCidrs: ['127.0.0.1/32'] }], callbackBackoffMs: 50 },
          },
          approvals: { timeoutMs: 120_000 },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await llm?.close();
    await new Promise((r) => server?.close(r));
  });
  const post = (text: string) => {
    const raw = JSON.stringify({ text, conversation: 'parked-1', sender: 'alice' });
    const ts = Math.floor(Date.now() / 1000);
    return fetch(`${gw.url}/v1/webhooks/crm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-switchboard-timestamp': String(ts), 'x-switchboard-signature': sign(SECRET, ts, raw) },
      body: raw,
    });
  };
  const texts = () => got.map((g) => String(g.body.text ?? ''));

  it('is in the 202 body; the callback gets the answer after the approval', async () => {
    expect((await post('run: touch x.txt')).status).toBe(202);
    const request = await eventually(async () => got.find((g) => g.body.finishReason === 'approval_pending'), 20_000).catch((err: Error) => {
      throw new Error(`${err.message}; callbacks: ${JSON.stringify(got.map((g) => g.body))}`);
    });
    const code = String(request.body.approvals[0]).replace('approval:', '');
    expect(request.body.text).toContain(`An operator must approve this (code ${code}).`);
    await parkedOn(gw, code);

    const started = Date.now();
    const r = await post('are you still there?');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(r.status).toBe(202);
    expect(await r.json()).toMatchObject({ accepted: true, duplicate: false, conversation: 'parked-1', notice: WAITING(code) });
    expect(llmSaw(llm, 'are you still there?')).toBe(false);

    await approve(gw, code);
    const seen = (err: Error) => {
      throw new Error(`${err.message}; callbacks: ${JSON.stringify(got.map((g) => g.body))}`);
    };
    await eventually(async () => texts().some((t) => /tool said: done/.test(t)), 20_000).catch(seen);
    await eventually(async () => texts().some((t) => /you said: are you still there\?/.test(t)), 20_000).catch(seen);
  });
});
