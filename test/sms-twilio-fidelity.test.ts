/**
 * Issue #23: the sms channel against a fake that behaves like Twilio where the
 * channel used to deviate. Advanced Opt-Out (localized keywords, OptOutType on
 * the webhook, Twilio's own replies and 21610 blocking), webhooks signed with a
 * SharedKey (X-Twilio-Webhooks-Signature-Settings), queued messages the carrier
 * takes out of order, and creates whose answer is lost. A real gateway
 * (embedded), the real twilio client, the fake LLM; assertions are about what
 * the phone received.
 */
import type { IncomingMessage } from 'node:http';
import twilio from 'twilio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { verifyTwilioRequest } from '../channels/sms/signature.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { FakeTwilio, standardOptOut } from './fakes/sms-twilio.js';
import { eventually, testConfig } from './support/gateway.js';

const PUBLIC = 'https://sms.example.test/hooks';
const INBOUND = '/v1/channels/sms/inbound';
const TWILIO_NUMBER = '+15550200000';
const num = (n: number) => `+1555020${String(n).padStart(4, '0')}`;
const USERS = Array.from({ length: 12 }, (_, i) => num(i + 1));
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';
const SIGNING_KEY = 'whsk_test_0123456789abcdef0123456789abcdef';

const LONG = Array.from({ length: 40 }, (_, i) => `Sentence ${i + 1} of a long answer, long enough that it needs several numbered parts to go out.`).join(' ');

describe('sms channel against a faithful Twilio (issue #23)', () => {
  let fake: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const t = lastUserText(req.body);
      return reply(t.startsWith('long') ? LONG : `Echo: ${t}`);
    });
    tw = new FakeTwilio(PUBLIC);
    // Advanced Opt-Out with French keywords, as a Messaging Service would have it.
    tw.optOut = standardOptOut({ advanced: true, extra: { STOP: ['ARRET'], START: ['COMMENCER'], HELP: ['AIDE'] } });
    await tw.start();
    const cfg = testConfig(
      fake,
      {},
      {
        channels: {
          sms: {
            accountSid: tw.accountSid,
            authTokenEnv: 'SB_TEST_TWILIO_TOKEN',
            webhookSigningKeyEnv: 'SB_TEST_TWILIO_SIGNING_KEY',
            publicUrl: PUBLIC,
            apiBaseUrl: tw.url,
            sendAttempts: 3,
            retryBaseMs: 20,
            retryMaxMs: 100,
            requestTimeoutMs: 1500,
            maxMessageChars: 400,
          },
        },
        access: { sms: { policy: 'allowlist', allow: USERS } },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), {
      ...process.env,
      SB_TEST_TWILIO_TOKEN: tw.authToken,
      SB_TEST_TWILIO_SIGNING_KEY: SIGNING_KEY,
    });
    tw.gatewayUrl = gw.url!;
  });
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await fake?.close();
  });

  const text = (from: string, body: string) => tw.webhook(INBOUND, tw.inboundParams({ from, to: TWILIO_NUMBER, body }));
  const llmCalls = (t: string) => fake.requests.filter((r) => lastUserText(r.body) === t).length;
  const phone = (to: string) => tw.phone(to).map((m) => `${m.via}: ${m.body}`);
  const rows = async (sql: string, params: unknown[]) => (await gw.infra.store.db.query<Record<string, any>>(sql, params)).rows;
  const optOutState = async (n: string) => (await rows(`select state from deliveries where turn_id = 'optout' and target = $1`, [n]))[0]?.state;
  const settle = () => new Promise((r) => setTimeout(r, 700));
  const replies = standardOptOut().replies;

  it('a localized STOP (ARRET, OptOutType=STOP) opts out without running the agent; COMMENCER opts back in', async () => {
    const u = USERS[0]!;
    const params = tw.inboundParams({ from: u, to: TWILIO_NUMBER, body: 'Arret' });
    expect(params.OptOutType).toBe('STOP'); // what Twilio posts
    const stop = await tw.webhook(INBOUND, params);
    expect(stop.body).toBe(EMPTY_TWIML);
    expect(await optOutState(u)).toBe('opted_out');
    expect((await text(u, 'still there?')).body).toBe(EMPTY_TWIML);
    await settle();
    expect(llmCalls('Arret')).toBe(0);
    expect(llmCalls('still there?')).toBe(0);

    expect((await text(u, 'COMMENCER')).body).toBe(EMPTY_TWIML);
    expect(await optOutState(u)).toBe('opted_in');
    await text(u, 'back again');
    await eventually(async () => tw.phone(u).some((m) => m.via === 'api'));
    // One confirmation each, Twilio's; then the answer.
    expect(phone(u)).toEqual([`twilio: ${replies.STOP}`, `twilio: ${replies.START}`, 'api: Echo: back again']);
    expect(llmCalls('COMMENCER')).toBe(0);
  });

  it('OptOutType=HELP on a word we do not know (AIDE) is HELP: not run, and only Twilio replies', async () => {
    const u = USERS[1]!;
    const r = await text(u, 'aide');
    expect(r.body).toBe(EMPTY_TWIML);
    await settle();
    expect(llmCalls('aide')).toBe(0);
    expect(phone(u)).toEqual([`twilio: ${replies.HELP}`]);
  });

  it('HELP and START get one reply (Twilio’s), not ours on top; STOP is recorded either way', async () => {
    const u = USERS[2]!;
    await text(u, 'HELP');
    await text(u, 'STOP');
    expect(await optOutState(u)).toBe('opted_out');
    await text(u, 'START');
    expect(await optOutState(u)).toBe('opted_in');
    await settle();
    expect(phone(u)).toEqual([`twilio: ${replies.HELP}`, `twilio: ${replies.STOP}`, `twilio: ${replies.START}`]);
  });

  it('webhooks signed with a SharedKey (X-Twilio-Webhooks-Signature-Settings) are accepted with the signing key, status callbacks too', async () => {
    const u = USERS[3]!;
    tw.useSharedKey(SIGNING_KEY);
    try {
      const params = tw.inboundParams({ from: u, to: TWILIO_NUMBER, body: 'signed with a shared key' });
      // The header says SharedKey: an auth-token signature does not count then.
      const byToken = twilio.getExpectedTwilioSignature(tw.authToken, PUBLIC + INBOUND, params, 'HMAC_SHA256');
      expect((await tw.webhook(INBOUND, params, { signature: byToken })).status).toBe(403);
      const r = await tw.webhook(INBOUND, params);
      expect(r.status).toBe(200);
      await eventually(async () => tw.phone(u).length === 1);
      expect(phone(u)).toEqual(['api: Echo: signed with a shared key']);
      const sid = tw.sentTo(u)[0]!.sid;
      await eventually(async () => (await rows('select state from deliveries where target = $1', [`status:${sid}`]))[0]?.state === 'delivered');
    } finally {
      tw.useAuthToken();
    }
  });

  it('a SharedKey-signed webhook without a configured signing key is refused as such', () => {
    const url = `${PUBLIC}${INBOUND}`;
    const params = { Body: 'x', From: USERS[4]! };
    const settings = 'key=webhooks_sharedkey_abc,algorithm=HMAC_SHA256';
    const req = (signature: string) =>
      ({ headers: { 'x-twilio-signature': signature, 'x-twilio-webhooks-signature-settings': settings } }) as unknown as IncomingMessage;
    const byKey = twilio.getExpectedTwilioSignature(SIGNING_KEY, url, params, 'HMAC_SHA256');
    expect(verifyTwilioRequest(req(byKey), { authToken: tw.authToken }, url, params)).toEqual({
      ok: false,
      reason: 'no_signing_key',
      algorithm: 'HMAC_SHA256',
    });
    expect(verifyTwilioRequest(req(byKey), { authToken: tw.authToken, signingKey: SIGNING_KEY }, url, params)).toEqual({ ok: true, signedWith: 'signing_key' });
    const plain = { headers: { 'x-twilio-signature': twilio.getExpectedTwilioSignature(tw.authToken, url, params) } } as unknown as IncomingMessage;
    expect(verifyTwilioRequest(plain, { authToken: tw.authToken, signingKey: SIGNING_KEY }, url, params)).toEqual({ ok: true, signedWith: 'auth_token' });
  });

  it('numbered parts reach the phone in order even when the carrier takes a later one first', async () => {
    const u = USERS[5]!;
    // Part 1 stays queued for 800 ms, the others 5 ms: sent back to back, (2/n) would arrive first.
    tw.carrierDelayMs = (m, i) => (m.to === u && i === 0 ? 800 : 5);
    try {
      await text(u, 'long one');
      const n = await eventually(async () => {
        const got = tw.phone(u);
        const total = /^\(\d+\/(\d+)\)/.exec(got[0]?.body ?? '')?.[1];
        return total && got.length === Number(total) ? Number(total) : null;
      }, 30_000);
      expect(n).toBeGreaterThan(2);
      expect(tw.phone(u).map((m) => /^\((\d+)\/\d+\) /.exec(m.body)?.[1])).toEqual(Array.from({ length: n }, (_, i) => String(i + 1)));
      const sent = tw.sentTo(u);
      for (let i = 1; i < sent.length; i++) expect(sent[i]!.dateCreated.getTime()).toBeGreaterThanOrEqual(sent[i - 1]!.dateSent!.getTime());
    } finally {
      tw.carrierDelayMs = () => 5;
    }
  });

  it('a create whose answer is lost (connection reset) is looked up, not sent twice', async () => {
    const u = USERS[6]!;
    tw.loseResponseNext(1, 'reset', (m) => m.to === u);
    await text(u, 'lost answer');
    await eventually(async () => (await rows(`select * from deliveries where channel = 'sms' and target = $1 and state = 'sent'`, [u]))[0]);
    await settle();
    expect(phone(u)).toEqual(['api: Echo: lost answer']);
    expect(tw.sentTo(u)).toHaveLength(1);
    expect(tw.lookups.some((q) => new URLSearchParams(q).get('To') === u)).toBe(true);
    const [row] = await rows(`select platform_message_id from deliveries where channel = 'sms' and target = $1`, [u]);
    expect(row!.platform_message_id).toBe(tw.sentTo(u)[0]!.sid);
  });

  it('a part still queued when its lost answer times out is found too (no DateSent filter)', async () => {
    const u = USERS[7]!;
    // The create hangs past requestTimeoutMs and the message stays queued for 3 s: date_sent is still null at the look-up.
    tw.carrierDelayMs = (m) => (m.to === u ? 3000 : 5);
    tw.loseResponseNext(1, 'hang', (m) => m.to === u);
    try {
      await text(u, 'slow carrier');
      await eventually(async () => tw.phone(u).length === 1, 20_000);
      await settle();
      expect(tw.sentTo(u)).toHaveLength(1);
      expect(phone(u)).toEqual(['api: Echo: slow carrier']);
    } finally {
      tw.carrierDelayMs = () => 5;
    }
  });

  it('when the look-ups fail too, a delivery job sends the reply later and looks the part up before sending', async () => {
    const u = USERS[8]!;
    // Created, answer lost; both look-ups of this attempt fail (sendAttempts 3): close() throws, the turn
    // closes and a delivery job replays the answer (the model is not asked again).
    tw.loseResponseNext(1, 'reset', (m) => m.to === u);
    tw.failLookups(2);
    await text(u, 'retried turn');
    await eventually(async () => (await rows(`select * from deliveries where channel = 'sms' and target = $1 and state = 'sent'`, [u]))[0], 20_000);
    await settle();
    expect(tw.sentTo(u)).toHaveLength(1);
    expect(phone(u)).toEqual(['api: Echo: retried turn']);
    expect(llmCalls('retried turn')).toBe(1);
  });
});
