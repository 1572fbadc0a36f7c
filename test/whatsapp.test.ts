/**
 * The whatsapp channel end to end: a real gateway with the whatsapp channel, the real twilio
 * client pointed at the fake Twilio (Messages API with whatsapp: addresses, Content API
 * templates, the 24-hour window as Twilio enforces it, media behind basic auth), webhooks signed
 * as Twilio signs them behind a proxy, and the fake LLM. Assertions are about what the person's
 * WhatsApp receives.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { eventually, testConfig } from './support/gateway.js';

const PUBLIC = 'https://wa.example.test/hooks';
const INBOUND = '/v1/channels/whatsapp/inbound';
const SENDER = 'whatsapp:+15550200000';
const OPERATOR = 'whatsapp:+15550209999';
const wa = (n: number) => `whatsapp:+1555020${String(n).padStart(4, '0')}`;
const USERS = Array.from({ length: 20 }, (_, i) => wa(i + 1));
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';
const SHARED_KEY = 'wa-shared-key-secret-0123456789';
const REOPEN = `HX${'a1'.repeat(16)}`;
const APPROVE = `HX${'b2'.repeat(16)}`;
/** A 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

type Part = { type: string; text?: string; image_url?: { url: string } };
const imageParts = (req: FakeRequest): string[] =>
  (req.body.messages as Array<{ content: string | Part[] }>).flatMap((m) =>
    Array.isArray(m.content) ? m.content.filter((p) => p.type === 'image_url').map((p) => p.image_url!.url) : [],
  );

const LONG = Array.from({ length: 50 }, (_, i) => `Sentence ${i + 1} of a long answer that keeps going for a while longer.`).join(' ');

describe('whatsapp channel (Twilio)', () => {
  let fake: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;
  let tw2: FakeTwilio;
  let noTemplate: Gateway;

  const backdate = (addr: string) => gw.infra.channelState.set('whatsapp', `last-inbound:${addr}`, new Date(Date.now() - 25 * 3_600_000).toISOString());

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
      const last = msgs[msgs.length - 1]!;
      if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 200)}`);
      const text = lastUserText(req.body);
      if (text.startsWith('run: ')) return toolCall('shell_exec', { command: text.slice(5) });
      if (text.startsWith('long')) return reply(LONG);
      if (text.startsWith('picture')) return reply(`I see ${imageParts(req).length} image(s)`);
      return reply(`**Echo**: ${text}`);
    });
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const channel = {
      accountSid: tw.accountSid,
      authTokenEnv: 'SB_TEST_TWILIO_TOKEN',
      publicUrl: PUBLIC,
      apiBaseUrl: tw.url,
      sendAttempts: 2,
      retryBaseMs: 20,
      retryMaxMs: 50,
      requestTimeoutMs: 1500,
      outsideWindowTemplate: { contentSid: REOPEN, variables: { '1': 'We have an answer for you. Reply to see it.' } },
      approvalTemplate: { contentSid: APPROVE, variables: { '1': '{{text}}', '2': '{{code}}' } },
      webhookSigningKeyEnv: 'SB_TEST_WA_KEY',
    };
    const env = { ...process.env, SB_TEST_TWILIO_TOKEN: tw.authToken, SB_TEST_WA_KEY: SHARED_KEY };
    const cfg = testConfig(
      fake,
      {},
      {
        provider: { input: ['text', 'image'] },
        channels: { whatsapp: channel },
        access: { whatsapp: { policy: 'allowlist', allow: [...USERS, OPERATOR] } },
        approvals: { operators: { whatsapp: [OPERATOR] }, timeoutMs: 60_000 },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), env);
    tw.gatewayUrl = gw.url!;
    // A second gateway (and Twilio account) with no outsideWindowTemplate.
    tw2 = new FakeTwilio(PUBLIC);
    await tw2.start();
    const { outsideWindowTemplate: _, approvalTemplate: __, webhookSigningKeyEnv: ___, ...bare } = channel;
    const cfg2 = testConfig(
      fake,
      {},
      {
        channels: { whatsapp: { ...bare, accountSid: tw2.accountSid, apiBaseUrl: tw2.url, authTokenEnv: 'SB_TEST_TWILIO_TOKEN2' } },
        access: { whatsapp: { policy: 'open' } },
        approvals: { operators: { whatsapp: [OPERATOR] }, timeoutMs: 60_000 },
      },
    );
    noTemplate = await Gateway.start(cfg2, { ingress: true, worker: true }, createLogger(cfg2.log.level), { ...env, SB_TEST_TWILIO_TOKEN2: tw2.authToken });
    tw2.gatewayUrl = noTemplate.url!;
  });
  afterAll(async () => {
    await noTemplate?.close();
    await tw2?.close();
    await gw?.close();
    await tw?.close();
    await fake?.close();
  });

  const send = (from: string, body: string, extra: Partial<Parameters<FakeTwilio['whatsappParams']>[0]> = {}) =>
    tw.webhook(INBOUND, tw.whatsappParams({ from, to: SENDER, body, ...extra }));
  const delivered = (to: string) => tw.sentTo(to).filter((m) => !m.errorCode);
  const bodies = (to: string) => delivered(to).map((m) => m.body);
  const llmCalls = (t: string) => fake.requests.filter((r) => lastUserText(r.body) === t).length;
  const settle = () => new Promise((r) => setTimeout(r, 700));
  const rows = async (sql: string, params: unknown[]) => (await gw.infra.store.db.query<Record<string, any>>(sql, params)).rows;
  const phone = (to: string) => tw.phone(to).map((m) => m.body);

  it('answers a signed webhook with empty TwiML, then sends the buffered reply from the WhatsApp sender', async () => {
    const u = USERS[0]!;
    const r = await send(u, 'hello there');
    expect(r.status).toBe(200);
    expect(r.body).toBe(EMPTY_TWIML);
    await eventually(async () => bodies(u).length === 1);
    expect(bodies(u)).toEqual(['Echo: hello there']);
    expect(tw.sentTo(u)[0]).toMatchObject({ to: u, from: SENDER });
    expect(tw.sentTo(u).every((m) => !m.errorCode)).toBe(true); // Twilio failed none (63016)
  });

  it('splits a long reply at the 1600-character limit', async () => {
    const u = USERS[1]!;
    await send(u, 'long please');
    await eventually(async () => bodies(u).length >= 2);
    await settle();
    for (const b of bodies(u)) expect(b.length).toBeLessThanOrEqual(1600);
    expect(bodies(u).join(' ')).toContain('Sentence 50 of a long answer');
  });

  it('refuses a forged or unsigned webhook with 403 and queues nothing', async () => {
    const u = USERS[2]!;
    const params = tw.whatsappParams({ from: u, to: SENDER, body: 'forged hi' });
    expect((await tw.webhook(INBOUND, params, { signature: 'dGhpcyBpcyBub3QgaXQ=' })).status).toBe(403);
    expect((await tw.webhook(INBOUND, params, { signature: null })).status).toBe(403);
    expect((await tw.webhook(INBOUND, { ...params, Body: 'run: rm -rf ~' }, { signature: tw.sign(PUBLIC + INBOUND, params) })).status).toBe(403);
    await settle();
    expect(llmCalls('forged hi')).toBe(0);
    expect(tw.sentTo(u)).toEqual([]);
    const rows = await gw.infra.store.db.query<{ n: number }>('select count(*)::int as n from inbox where channel = $1 and external_id = $2', [
      'whatsapp',
      params.MessageSid,
    ]);
    expect(rows.rows).toEqual([{ n: 0 }]);
  });

  it('accepts webhooks signed with a configured SharedKey; without one configured they are refused', async () => {
    const u = USERS[10]!;
    tw.useSharedKey(SHARED_KEY);
    tw2.useSharedKey(SHARED_KEY);
    try {
      expect((await send(u, 'shared key hello')).status).toBe(200);
      await eventually(async () => bodies(u).length === 1);
      expect(bodies(u)).toEqual(['Echo: shared key hello']);
      const r = await tw2.webhook(INBOUND, tw2.whatsappParams({ from: u, to: SENDER, body: 'no key here' }));
      expect(r.status).toBe(403);
      expect(r.body).toContain('no webhook signing key is configured');
    } finally {
      tw.useAuthToken();
      tw2.useAuthToken();
    }
    await settle();
    expect(llmCalls('no key here')).toBe(0);
  });

  it('ignores a duplicate delivery of the same MessageSid', async () => {
    const u = USERS[3]!;
    const sid = `SM${'cd'.repeat(16)}`;
    const all = await Promise.all([send(u, 'only once', { sid }), send(u, 'only once', { sid }), send(u, 'only once', { sid })]);
    for (const r of all) expect(r.status).toBe(200);
    await eventually(async () => bodies(u).length >= 1);
    await settle();
    expect(bodies(u)).toEqual(['Echo: only once']);
    expect(llmCalls('only once')).toBe(1);
  });

  it('an approval by quick-reply button: the template carries the code, only the operator decides', async () => {
    const u = USERS[4]!;
    await send(u, 'run: echo wa >> wa.txt');
    const card = await eventually(async () => tw.sentTo(u).find((m) => m.contentSid === APPROVE));
    const vars = JSON.parse(card.contentVariables!) as Record<string, string>;
    const code = vars['2']!;
    expect(code).toMatch(/^[A-Z0-9]{5}$/);
    expect(vars['1']).toContain(code);
    // The requester pressing the button is refused (not an operator).
    const notOperator = await send(u, '', { button: { payload: `YES ${code}`, text: 'Approve' } });
    expect(notOperator.body).toContain(`Only an operator can answer approval ${code}.`);
    expect((await gw.infra.approvals.byCode(code))!.status).toBe('pending');
    await send(OPERATOR, 'hi'); // the operator's own window
    const ok = await send(OPERATOR, '', { button: { payload: `YES ${code}`, text: 'Approve' } });
    expect(ok.body).toContain(`${code} approved by ${OPERATOR}.`);
    const done = await eventually(async () => bodies(u).find((b) => b.startsWith('tool said')));
    expect(done).toContain('exit code 0');
    expect((await gw.infra.approvals.byCode(code))!).toMatchObject({ status: 'executed', decidedVia: 'whatsapp', decidedBy: `whatsapp:${OPERATOR}` });
  });

  it('an approval by typed code "YES CODE"', async () => {
    const u = USERS[5]!;
    await send(u, 'run: echo typed >> wa2.txt');
    const card = await eventually(async () => tw.sentTo(u).find((m) => m.contentSid === APPROVE));
    const code = (JSON.parse(card.contentVariables!) as Record<string, string>)['2']!;
    const ok = await send(OPERATOR, `yes ${code.toLowerCase()}`);
    expect(ok.body).toContain(`${code} approved by ${OPERATOR}.`);
    await eventually(async () => bodies(u).find((b) => b.startsWith('tool said')));
  });

  it('outside the 24-hour window the configured template goes instead of a free-form reply', async () => {
    const u = USERS[6]!;
    await send(u, 'first contact');
    await eventually(async () => bodies(u).length === 1);
    await backdate(u); // a day later, the person has not written since
    tw.whatsappLastInbound.set(u, Date.now() - 25 * 3_600_000);
    await send(OPERATOR, 'hi');
    await send(u, 'run: echo late >> late.txt');
    const card = await eventually(async () => tw.sentTo(u).find((m) => m.contentSid === APPROVE));
    const code = (JSON.parse(card.contentVariables!) as Record<string, string>)['2']!;
    await backdate(u);
    tw.whatsappLastInbound.set(u, Date.now() - 25 * 3_600_000);
    await send(OPERATOR, `YES ${code}`);
    const reopen = await eventually(async () => tw.sentTo(u).find((m) => m.contentSid === REOPEN));
    expect(JSON.parse(reopen.contentVariables!)).toEqual({ '1': 'We have an answer for you. Reply to see it.' });
    await settle();
    expect(tw.sentTo(u).filter((m) => m.errorCode === 63016)).toEqual([]); // nothing Twilio would fail
    expect(bodies(u).some((b) => b.startsWith('tool said'))).toBe(false);
  });

  it('a create whose answer never comes (timeout) is looked up on Twilio, not sent twice', async () => {
    const u = USERS[12]!;
    // Twilio accepts the message, and the HTTP answer never arrives: the client times out (requestTimeoutMs).
    tw.loseResponseNext(1, 'hang', (m) => m.to === u);
    await send(u, 'lost in the network');
    const [row] = await eventually(async () => {
      const r = await rows(`select platform_message_id from deliveries where channel = 'whatsapp' and target = $1 and state = 'sent'`, [u]);
      return r.length ? r : null;
    }, 20_000);
    await eventually(async () => phone(u).length === 1);
    await settle();
    expect(phone(u)).toEqual(['Echo: lost in the network']);
    expect(tw.sentTo(u)).toHaveLength(1);
    expect(tw.lookups.some((q) => new URLSearchParams(q).get('To') === u)).toBe(true);
    expect(row!.platform_message_id).toBe(tw.sentTo(u)[0]!.sid);
  });

  it('a reply that went as the template: its retry sends that template once, not the reply, though the window has reopened', async () => {
    const u = USERS[13]!;
    tw.contents.set(REOPEN, 'Hi! {{1}}');
    await send(u, 'run: echo retried >> retried.txt');
    const card = await eventually(async () => tw.sentTo(u).find((m) => m.contentSid === APPROVE));
    const code = (JSON.parse(card.contentVariables!) as Record<string, string>)['2']!;
    await backdate(u);
    tw.whatsappLastInbound.set(u, Date.now() - 25 * 3_600_000);
    // The template is created, its answer is lost and the look-up fails: the attempt gives up and a
    // delivery job replays the turn. Meanwhile the person writes again: the window is open at the replay.
    tw.loseResponseNext(1, 'reset', (m) => m.to === u);
    tw.failLookups(1);
    tw.onCreate = (m) => {
      if (m.to !== u || m.contentSid !== REOPEN) return;
      tw.onCreate = undefined;
      tw.whatsappLastInbound.set(u, Date.now());
      void gw.infra.channelState.set('whatsapp', `last-inbound:${u}`, new Date().toISOString());
    };
    await send(OPERATOR, 'hi');
    await send(OPERATOR, `YES ${code}`);
    const summary = await eventually(async () => {
      const r = await rows(`select state, body, platform_message_id from deliveries where channel = 'whatsapp' and target = $1 and state = 'sent:template'`, [
        u,
      ]);
      return r[0] ?? null;
    }, 20_000);
    await settle();
    const templates = tw.sentTo(u).filter((m) => m.contentSid === REOPEN);
    expect(templates).toHaveLength(1);
    expect(phone(u).filter((b) => b === 'Hi! We have an answer for you. Reply to see it.')).toHaveLength(1);
    expect(bodies(u).some((b) => b.startsWith('tool said'))).toBe(false); // not the reply on top
    // The row shows what went: the template, its variables, its SID; and the reply it stood for.
    const shown = JSON.parse(summary.body) as { contentSid: string; contentVariables: Record<string, string>; reply: string };
    expect(shown).toMatchObject({ contentSid: REOPEN, contentVariables: { '1': 'We have an answer for you. Reply to see it.' } });
    expect(shown.reply).toContain('tool said');
    expect(summary.platform_message_id).toBe(templates[0]!.sid);
  });

  it('a message Twilio fails after accepting it (63016: its window and ours disagree) marks the delivery row; a forged status callback is refused', async () => {
    const u = USERS[14]!;
    tw.whatsappWindowClosed.add(u);
    try {
      await send(u, 'closed on their side');
      const msg = await eventually(async () => tw.sentTo(u)[0]);
      expect(msg.statusCallback).toMatch(new RegExp(`^${PUBLIC}/v1/channels/whatsapp/status\\?t=`));
      const row = await eventually(async () => {
        const r = await rows(`select state, platform_message_id, turn_id from deliveries where channel = 'whatsapp' and target = $1`, [u]);
        return r[0]?.state === 'failed:63016' ? r[0] : null;
      });
      expect(row.platform_message_id).toBe(msg.sid);
      const [status] = await rows(`select state, body from deliveries where channel = 'whatsapp' and target = $1`, [`status:${msg.sid}`]);
      expect(status).toMatchObject({ state: 'failed' });
      expect(JSON.parse(status!.body)).toEqual({ to: u, errorCode: '63016' });
      expect(phone(u)).toEqual([]);
      // A status callback without Twilio's signature changes nothing.
      const forged = await tw.statusCallback(msg.statusCallback!, { sid: msg.sid, to: u, from: SENDER, status: 'delivered' }, { signature: 'bm90IGl0' });
      expect(forged).toBe(403);
      const [after] = await rows(`select state from deliveries where channel = 'whatsapp' and target = $1`, [u]);
      expect(after!.state).toBe('failed:63016');
    } finally {
      tw.whatsappWindowClosed.delete(u);
    }
  });

  it('a template Twilio refuses is recorded as failed with its error code on the delivery row', async () => {
    const u = USERS[15]!;
    await send(u, 'run: echo refused >> refused.txt');
    const card = await eventually(async () => tw.sentTo(u).find((m) => m.contentSid === APPROVE));
    const code = (JSON.parse(card.contentVariables!) as Record<string, string>)['2']!;
    await backdate(u);
    tw.whatsappLastInbound.set(u, Date.now() - 25 * 3_600_000);
    tw.failNext(1, { status: 400, code: 63027, message: 'Template does not exist for a language and locale' }, (m) => m.to === u);
    await send(OPERATOR, 'hi');
    await send(OPERATOR, `YES ${code}`);
    const row = await eventually(async () => {
      const r = await rows(`select state, body from deliveries where channel = 'whatsapp' and target = $1`, [u]);
      return r[0]?.state === 'failed:63027' ? r[0] : null;
    });
    expect(JSON.parse(row.body)).toMatchObject({ contentSid: REOPEN });
    await settle();
    expect(tw.sentTo(u).filter((m) => m.contentSid === REOPEN)).toEqual([]);
  });

  it('outside the window with no template: a clear failure, recorded and counted, nothing sent', async () => {
    const u = USERS[9]!;
    const send2 = (from: string, body: string) => tw2.webhook(INBOUND, tw2.whatsappParams({ from, to: SENDER, body }));
    await send2(u, 'run: echo stale >> stale.txt');
    // No approval template here: the request goes as text with its code.
    const ask = await eventually(async () => tw2.sentTo(u).find((m) => /code [A-Z0-9]{5}/.test(m.body)));
    const code = /code ([A-Z0-9]{5})/.exec(ask.body)![1]!;
    // The operator answers a day later: the person's window has closed.
    await noTemplate.infra.channelState.set('whatsapp', `last-inbound:${u}`, new Date(Date.now() - 25 * 3_600_000).toISOString());
    tw2.whatsappLastInbound.set(u, Date.now() - 25 * 3_600_000);
    await send2(OPERATOR, `YES ${code}`);
    const q = (sql: string) => noTemplate.infra.store.db.query<Record<string, any>>(sql, []);
    await eventually(async () => (await q("select state from deliveries where channel = 'whatsapp' and state = 'failed:outside_window'")).rows.length === 1);
    await settle();
    expect(tw2.sentTo(u).map((m) => m.body)).toEqual([ask.body]); // nothing more went out (Twilio would fail it: 63016)
    const metrics = await (await fetch(`${noTemplate.url}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_delivery_dead_letters_total\{[^}]*channel="whatsapp"[^}]*\} [1-9]/);
  });

  it('an image message reaches the model as an image part', async () => {
    const u = USERS[7]!;
    const url = tw.addWhatsAppMedia(PNG, 'image/png');
    // Without auth the media is refused, as on Twilio.
    expect((await fetch(url)).status).toBe(401);
    await send(u, 'picture of my cat', { media: [{ url, contentType: 'image/png' }] });
    await eventually(async () => bodies(u).length === 1);
    expect(bodies(u)).toEqual(['I see 1 image(s)']);
    const call = fake.requests.find((r) => lastUserText(r.body).startsWith('picture of my cat'))!;
    expect(imageParts(call)).toEqual([`data:image/png;base64,${PNG.toString('base64')}`]);
  });

  it("an image URL outside this account's Twilio media is not fetched (no credentials sent elsewhere)", async () => {
    const u = USERS[11]!;
    const elsewhere = tw2.addWhatsAppMedia(PNG, 'image/png'); // another account's media
    await send(u, 'picture from elsewhere', { media: [{ url: elsewhere, contentType: 'image/png' }] });
    await eventually(async () => bodies(u).length === 1);
    expect(bodies(u)).toEqual(['I see 0 image(s)']);
    const call = fake.requests.find((r) => lastUserText(r.body).startsWith('picture from elsewhere'))!;
    expect(lastUserText(call.body)).toContain('could not be read');
  });

  it('a non-image attachment becomes a text note', async () => {
    const u = USERS[8]!;
    const url = tw.addWhatsAppMedia(Buffer.from('%PDF-1.4 fake'), 'application/pdf');
    await send(u, 'picture? no, a pdf', { media: [{ url, contentType: 'application/pdf' }] });
    await eventually(async () => bodies(u).length === 1);
    const call = fake.requests.find((r) => lastUserText(r.body).startsWith('picture? no, a pdf'))!;
    expect(imageParts(call)).toEqual([]);
    expect(lastUserText(call.body)).toContain('application/pdf attachment');
  });
});
