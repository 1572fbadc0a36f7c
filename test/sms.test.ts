/**
 * The sms channel end to end: a real gateway (embedded) with the sms channel,
 * the real twilio client pointed at a fake Twilio REST API, webhooks signed as
 * Twilio signs them and sent through a "proxy" (public URL ≠ local URL), and
 * the fake LLM. Assertions are about what a phone would receive.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { eventually, testConfig } from './support/gateway.js';

const PUBLIC = 'https://sms.example.test/hooks'; // the proxy strips /hooks
const INBOUND = '/v1/channels/sms/inbound';
const STATUS = '/v1/channels/sms/status';
const TWILIO_NUMBER = '+15550100000';
const OPERATOR = '+15550109999';
const STRANGER = '+15550108888';
const num = (n: number) => `+1555010${String(n).padStart(4, '0')}`;
const USERS = Array.from({ length: 30 }, (_, i) => num(i + 1));
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

const LONG = Array.from(
  { length: 60 },
  (_, i) => `Paragraph sentence ${i + 1} explains **one more thing** about the subject in some detail, so that the answer grows long enough.`,
).join(' ');

function responder(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 200)}`);
  const text = lastUserText(req.body);
  if (text.startsWith('run: ')) return toolCall('shell_exec', { command: text.slice(5) });
  if (text.startsWith('long')) return reply(LONG);
  if (text.startsWith('slow')) return reply('A slow answer that takes its time to arrive, word by word, at last.', 120);
  return reply(`**Echo**: ${text}`);
}

describe('sms channel (Twilio)', () => {
  let fake: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(responder);
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const cfg = testConfig(
      fake,
      {},
      {
        channels: {
          sms: {
            accountSid: tw.accountSid,
            authTokenEnv: 'SB_TEST_TWILIO_TOKEN',
            publicUrl: PUBLIC,
            apiBaseUrl: tw.url,
            sendAttempts: 3,
            retryBaseMs: 20,
            retryMaxMs: 100,
            helpText: 'Switchboard test assistant. Reply STOP to opt out.',
            keywordReplies: 'gateway', // this suite checks our own replies; sms-twilio-fidelity.test.ts the default
          },
        },
        access: { sms: { policy: 'allowlist', allow: USERS } },
        approvals: { operators: { sms: [OPERATOR] }, timeoutMs: 60_000 },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_TEST_TWILIO_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
  });
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await fake?.close();
  });

  const text = (from: string, body: string, sid?: string) => tw.webhook(INBOUND, tw.inboundParams({ from, to: TWILIO_NUMBER, body, ...(sid ? { sid } : {}) }));
  const llmCalls = (t: string) => fake.requests.filter((r) => lastUserText(r.body) === t).length;
  const bodies = (to: string) => tw.sentTo(to).map((m) => m.body);
  const rows = async (sql: string, params: unknown[]) => (await gw.infra.store.db.query<Record<string, any>>(sql, params)).rows;
  const settle = () => new Promise((r) => setTimeout(r, 700));

  it('answers a signed webhook at once with empty TwiML, then texts the answer as plain text', async () => {
    const u = USERS[0]!;
    const r = await text(u, 'slow hello');
    expect(r.status).toBe(200);
    expect(r.contentType).toMatch(/^text\/xml/);
    expect(r.body).toBe(EMPTY_TWIML);
    expect(bodies(u)).toEqual([]); // the webhook did not wait for the agent
    // The suite's first turn (a slow, word-by-word answer) on a busy machine: more time than later ones.
    await eventually(async () => bodies(u).length === 1, 30_000);
    expect(bodies(u)).toEqual(['A slow answer that takes its time to arrive, word by word, at last.']);
    expect(tw.sentTo(u)[0]!.from).toBe(TWILIO_NUMBER); // from the number the person texted

    const e = USERS[1]!;
    await text(e, 'hi there');
    await eventually(async () => bodies(e).length === 1);
    expect(bodies(e)).toEqual(['Echo: hi there']); // markdown stripped
  });

  it('refuses forged, unsigned and wrongly addressed webhooks', async () => {
    const u = USERS[2]!;
    const params = tw.inboundParams({ from: u, to: TWILIO_NUMBER, body: 'forged' });
    expect((await tw.webhook(INBOUND, params, { signature: 'dGhpcyBpcyBub3QgaXQ=' })).status).toBe(403);
    expect((await tw.webhook(INBOUND, params, { signature: null })).status).toBe(403);
    // Signed over the local URL: behind the proxy that is not the URL Twilio called.
    expect((await tw.webhook(INBOUND, params, { signatureUrl: gw.url! + INBOUND })).status).toBe(403);
    expect((await tw.webhook(INBOUND, params, { signatureUrl: 'https://sms.example.test' + INBOUND })).status).toBe(403);
    // Signed, then tampered with.
    const tampered = { ...params, Body: 'run: rm -rf ~' };
    expect((await tw.webhook(INBOUND, tampered, { signature: tw.sign(PUBLIC + INBOUND, params) })).status).toBe(403);
    // Another account's (correctly signed) request.
    expect((await tw.webhook(INBOUND, { ...params, AccountSid: `AC${'1'.repeat(32)}` })).status).toBe(403);
    await settle();
    expect(llmCalls('forged')).toBe(0);
    expect(bodies(u)).toEqual([]);
  });

  it('answers a replayed MessageSid once', async () => {
    const u = USERS[3]!;
    const sid = `SM${'ab'.repeat(16)}`;
    const first = await text(u, 'replay me', sid);
    const again = await Promise.all([text(u, 'replay me', sid), text(u, 'replay me', sid)]);
    for (const r of [first, ...again]) {
      expect(r.status).toBe(200);
      expect(r.body).toBe(EMPTY_TWIML);
    }
    await eventually(async () => bodies(u).length >= 1);
    await settle();
    expect(bodies(u)).toEqual(['Echo: replay me']);
    expect(llmCalls('replay me')).toBe(1);
    expect(await rows('select count(*)::int as n from inbox where channel = $1 and external_id = $2', ['sms', sid])).toEqual([{ n: 1 }]);
  });

  it('keeps media as attachment metadata', async () => {
    const u = USERS[4]!;
    const params = tw.inboundParams({
      from: u,
      to: TWILIO_NUMBER,
      body: 'a picture',
      media: [{ url: 'https://api.twilio.com/media/ME1', contentType: 'text/vcard' }],
    });
    expect((await tw.webhook(INBOUND, params)).status).toBe(200);
    const [row] = await rows('select attachments, reply_to, sender from inbox where external_id = $1', [params.MessageSid]);
    // A contact card is not an image: named, not downloaded (images: test/sms-images.test.ts).
    expect(row!.attachments).toEqual([{ name: 'media-0', contentType: 'text/vcard', url: 'https://api.twilio.com/media/ME1' }]);
    expect(row!.reply_to).toEqual({ to: u, from: TWILIO_NUMBER });
    expect(row!.sender).toEqual({ id: u });
    await eventually(async () => bodies(u).length === 1);
  });

  it('splits a long answer into numbered messages of at most 1600 characters, in order', async () => {
    const u = USERS[5]!;
    await text(u, 'long please');
    const expected = LONG.replace(/\*\*/g, '');
    await eventually(async () => bodies(u).join(' ').length >= expected.length);
    const got = tw.sentTo(u);
    expect(got.length).toBeGreaterThan(2);
    got.forEach((m, i) => {
      expect(m.body.length).toBeLessThanOrEqual(1600);
      expect(m.body.startsWith(`(${i + 1}/${got.length}) `)).toBe(true);
      expect(m.body).toMatch(/\.$/); // cut at a sentence
    });
    expect(got.map((m) => m.body.replace(/^\(\d+\/\d+\) /, '')).join(' ')).toBe(expected);
    // Sent one after the other.
    for (let i = 1; i < got.length; i++) expect(got[i]!.at).toBeGreaterThanOrEqual(got[i - 1]!.at);
  });

  it('retries transient send failures with backoff; records status callbacks', async () => {
    const u = USERS[6]!;
    tw.failNext(1, { status: 429, code: 20429, message: 'Too Many Requests' }, (m) => m.to === u);
    tw.failNext(1, { status: 503, code: 20503, message: 'Service Unavailable' }, (m) => m.to === u);
    await text(u, 'flaky');
    await eventually(async () => bodies(u).length === 1);
    expect(tw.attempts.filter((a) => a.to === u).map((a) => a.status)).toEqual([429, 503, 201]);
    expect(bodies(u)).toEqual(['Echo: flaky']);
    const sid = tw.sentTo(u)[0]!.sid;
    const sent = await eventually(async () => (await rows(`select * from deliveries where channel = 'sms' and target = $1 and state = 'sent'`, [u]))[0]);
    expect(sent).toMatchObject({ state: 'sent', platform_message_id: sid, body: 'Echo: flaky' });
    // Twilio's callbacks (signed over the public status URL, with the turn in its query) are recorded.
    expect(tw.sentTo(u)[0]!.statusCallback).toBe(`${PUBLIC}${STATUS}?t=${encodeURIComponent(sent!.turn_id)}`);
    await eventually(async () => (await rows(`select state from deliveries where target = $1`, [`status:${sid}`]))[0]?.state === 'delivered');
    // A late 'sent' does not move it back; a forged callback is refused.
    expect(await tw.statusCallback(tw.sentTo(u)[0]!.statusCallback!, { sid, to: u, from: TWILIO_NUMBER, status: 'sent' })).toBe(200);
    expect(
      await tw.statusCallback(
        tw.sentTo(u)[0]!.statusCallback!,
        { sid, to: u, from: TWILIO_NUMBER, status: 'failed', errorCode: '30003' },
        { signature: 'Zm9yZ2Vk' },
      ),
    ).toBe(403);
    const [status] = await rows(`select * from deliveries where target = $1`, [`status:${sid}`]);
    expect(status).toMatchObject({ turn_id: sent!.turn_id, state: 'delivered', platform_message_id: sid });
    expect(JSON.parse(status!.body)).toEqual({ to: u });
  });

  it('a reply whose sends keep failing is delivered by a delivery job, without texting twice what went out or asking the model again', async () => {
    const u = USERS[7]!;
    // The second part fails more often than sendAttempts (3): close() throws, the turn closes anyway and a
    // delivery job replays the answer (issue #21: delivery separate from thinking).
    tw.failNext(3, { status: 500, code: 20500, message: 'Internal Server Error' }, (m) => m.to === u && m.body.startsWith('(2/'));
    await text(u, 'long again');
    const expected = LONG.replace(/\*\*/g, '');
    await eventually(async () => bodies(u).join(' ').length >= expected.length, 20_000);
    await settle();
    const got = bodies(u);
    expect(got.map((b) => b.slice(0, 6))).toEqual(got.map((_, i) => `(${i + 1}/${got.length}) `)); // each part once, in order
    expect(llmCalls('long again')).toBe(1); // the model was asked once
    const [turn] = await rows(`select t.status, t.attempt from turns t join deliveries d on d.turn_id = t.id where d.target = $1`, [u]);
    expect(turn).toMatchObject({ status: 'done', attempt: 1 });
  });

  it('permanent failures are recorded on the delivery row and do not fail the turn', async () => {
    const bad = USERS[8]!;
    tw.failFor(bad, { status: 400, code: 21211, message: "The 'To' number is not a valid phone number." });
    await text(bad, 'to an invalid number');
    const row = await eventually(async () => (await rows(`select * from deliveries where channel = 'sms' and target = $1`, [bad]))[0]);
    expect(row.state).toBe('failed:21211');
    const [turn] = await rows('select status from turns where id = $1', [row.turn_id]);
    expect(turn!.status).toBe('done');
    expect(tw.attempts.filter((a) => a.to === bad).length).toBe(1); // not retried

    // 21610: Twilio says the number opted out; it is recorded as an opt-out too.
    const gone = USERS[9]!;
    tw.failFor(gone, { status: 400, code: 21610, message: 'Attempt to send to unsubscribed recipient' });
    await text(gone, 'unsubscribed elsewhere');
    await eventually(async () => (await rows(`select state from deliveries where turn_id = 'optout' and target = $1`, [gone]))[0]?.state === 'opted_out');
    await text(gone, 'still there?');
    await settle();
    expect(llmCalls('still there?')).toBe(0);
  });

  it('STOP opts out (nothing is sent, not even from a running turn) until START; HELP answers', async () => {
    const u = USERS[10]!;
    const help = await text(u, 'help');
    expect(help.body).toContain('<Message>Switchboard test assistant. Reply STOP to opt out.</Message>');

    // A turn is running when STOP arrives: its answer is not sent.
    await text(u, 'slow one');
    await eventually(async () => llmCalls('slow one') === 1);
    const stop = await text(u, 'Stop');
    expect(stop.status).toBe(200);
    expect(stop.body).toMatch(/<Message>You will receive no more messages.*START/);
    const suppressed = await eventually(
      async () => (await rows(`select * from deliveries where channel = 'sms' and target = $1 and turn_id <> 'optout'`, [u]))[0],
    );
    expect(suppressed.state).toBe('suppressed:opted_out');

    // A message while opted out: not answered (and not run through the model).
    expect((await text(u, 'are you there')).body).toBe(EMPTY_TWIML);
    await settle();
    expect(llmCalls('are you there')).toBe(0);
    expect(bodies(u)).toEqual([]);

    const start = await text(u, 'START');
    expect(start.body).toMatch(/<Message>You will receive messages from this assistant again/);
    await text(u, 'back again');
    await eventually(async () => bodies(u).length === 1);
    expect(bodies(u)).toEqual(['Echo: back again']);
    const [opt] = await rows(`select state, body from deliveries where turn_id = 'optout' and target = $1`, [u]);
    expect(opt).toMatchObject({ state: 'opted_in' });
  });

  it('refuses numbers that are not on the allowlist, with a reply', async () => {
    const r = await text(STRANGER, 'let me in');
    expect(r.status).toBe(200);
    expect(r.body).toMatch(/<Message>Sorry, this assistant only answers people on its allowlist\.<\/Message>/);
    await settle();
    expect(llmCalls('let me in')).toBe(0);
    expect(bodies(STRANGER)).toEqual([]);
  });

  it('an approval answered by SMS: only the operator number decides', async () => {
    const u = USERS[11]!;
    await text(u, 'run: echo sms >> sms.txt');
    const ask = await eventually(async () => bodies(u).find((b) => /code [A-Z0-9]{5}/.test(b)));
    const code = /code ([A-Z0-9]{5})/.exec(ask)![1]!;
    // The requester is no operator and may not approve their own request: told who can, not "Reply YES".
    expect(ask).toContain(`An operator must approve this (code ${code}).`);
    expect(ask).not.toContain('Reply YES');
    expect(bodies(u)).toHaveLength(1); // asked once (the request is not rendered twice)

    const before = fake.requests.length;
    const notOperator = await text(u, `YES ${code}`);
    expect(notOperator.body).toContain(`Only an operator can answer approval ${code}.`);
    const unknown = await text(OPERATOR, 'YES AAAAA');
    expect(unknown.body).toContain('There is no approval request with code AAAAA.');
    expect((await gw.infra.approvals.byCode(code))!.status).toBe('pending');

    const ok = await text(OPERATOR, `  yes ${code.toLowerCase()}! `);
    expect(ok.body).toContain(`${code} approved by ${OPERATOR}.`);
    const again = await text(OPERATOR, `NO ${code}`);
    expect(again.body).toMatch(new RegExp(`${code} was already approved`));

    const done = await eventually(async () => bodies(u).find((b) => b.startsWith('tool said')));
    expect(done).toContain('exit code 0');
    expect(bodies(u)).toHaveLength(2);
    expect((await gw.infra.approvals.byCode(code))!).toMatchObject({ status: 'executed', decidedVia: 'sms', decidedBy: `sms:${OPERATOR}` });
    expect(fake.requests.length).toBe(before + 1); // answers never reached the model; the resumed turn did
  });
});
