/**
 * Human takeover from an operator number under attack (session 11 review), over the Twilio fake with
 * the real twilio client and a real embedded gateway: a spoofed operator number without a valid
 * Twilio signature, an operator reply that carries another conversation's "#<ref>", a reply longer
 * than an SMS, a handback by an operator who does not hold the conversation, a reference to a
 * conversation of another channel, and operators compared per channel.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLedgerStore } from '../adapters/store/audit-ledger.js';
import { Gateway } from '../app/gateway.js';
import { isConfiguredOperator } from '../src/approvals/rights.js';
import { handoffRef } from '../src/handoffs/text.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { API_KEY, eventually, openaiClient, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

const PUBLIC = 'https://sms.example.test/hooks';
const INBOUND = '/v1/channels/sms/inbound';
const BOT_NUMBER = '+15550100000';
const OPERATOR = '+15550109999';
const ALICE = '+15550100001';
const BOB = '+15550100002';

describe('human takeover from an operator number: attacks (embedded)', () => {
  let llm: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;

  const text = (from: string, body: string, opts: { signature?: string | null; signatureUrl?: string } = {}) =>
    tw.webhook(INBOUND, tw.inboundParams({ from, to: BOT_NUMBER, body }), opts);
  const bodies = (to: string) => tw.sentTo(to).map((m) => m.body);
  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const conversation = async (from: string) =>
    (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'sms' and key = $1`, [`sms/${BOT_NUMBER}/${from}/-`])).rows[0]!
      .id;
  const handoffOf = async (id: string) =>
    (((await (await api('GET', '/v1/handoffs?recent=50')).json()) as any).data as Array<any>).find((h) => h.conversation === id);
  const transcript = async (id: string) =>
    ((await (await api('GET', `/v1/conversations/${id}/messages`)).json()) as any).data as Array<{ role: string; content: string; author?: string }>;
  const settle = () => new Promise((r) => setTimeout(r, 500));

  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    llm.respond((req) => reply(`agent: ${lastUserText(req.body)}`));
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const cfg = testConfig(
      llm,
      {},
      {
        channels: {
          sms: {
            accountSid: tw.accountSid,
            authTokenEnv: 'SB_TKA_TWILIO_TOKEN',
            publicUrl: PUBLIC,
            apiBaseUrl: tw.url,
            maxMessageChars: 160,
            sendAttempts: 3,
            retryBaseMs: 20,
            retryMaxMs: 100,
          },
        },
        access: { sms: { policy: 'allowlist', allow: [ALICE, BOB, OPERATOR] } },
        // The same number is a Discord/Telegram-shaped id elsewhere: operators are compared per channel.
        approvals: { operators: { sms: [OPERATOR], discord: ['15550100001'] } },
        takeover: { operatorChannel: { channel: 'sms', target: `${OPERATOR}|${BOT_NUMBER}` } },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_TKA_TWILIO_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await llm?.close();
  });

  it('attack: the operator number spoofed without a valid Twilio signature takes nothing over and texts nobody', async () => {
    await text(ALICE, 'hi');
    await eventually(async () => bodies(ALICE).includes('agent: hi'), 30_000);
    const id = await conversation(ALICE);
    const sent = tw.sentTo(ALICE).length;
    for (const opts of [
      { signature: null },
      { signature: 'AAAAAAAAAAAAAAAAAAAAAAAAAAA=' },
      { signatureUrl: 'https://evil.example/hooks/v1/channels/sms/inbound' },
    ]) {
      const r = await text(OPERATOR, `#${id} takeover`, opts);
      expect(r.status).toBe(403);
      expect(r.body).not.toContain('Taken over');
    }
    await settle();
    expect(await handoffOf(id)).toBeUndefined();
    expect(tw.sentTo(ALICE)).toHaveLength(sent);
    expect((await transcript(id)).some((m) => m.content.includes('takeover'))).toBe(false);
  });

  it("attack: an operator reply carrying another conversation's #<ref> is text for this one; a long reply reaches the user whole, in segments", async () => {
    await text(BOB, 'hello');
    await eventually(async () => bodies(BOB).includes('agent: hello'), 30_000);
    const alice = await conversation(ALICE);
    const bob = await conversation(BOB);
    expect((await api('POST', `/v1/conversations/${alice}/takeover`)).status).toBe(201);
    expect((await api('POST', `/v1/conversations/${bob}/takeover`)).status).toBe(201);
    // Held by the API operator; the SMS operator writes to it all the same (operators are peers).
    const refA = handoffRef((await handoffOf(alice)).id);
    const refB = handoffRef((await handoffOf(bob)).id);
    const r = await text(OPERATOR, `#${refA} see #${refB} handback: done`);
    expect(r.body).toContain(`Sent to ${alice}`);
    await eventually(async () => bodies(ALICE).includes(`see #${refB} handback: done`));
    expect(await handoffOf(bob)).toMatchObject({ state: 'taken' });
    expect(bodies(BOB).some((b) => b.includes('see #'))).toBe(false);

    const long = Array.from({ length: 60 }, (_, i) => `word${i}`)
      .join(' ')
      .repeat(2);
    expect((await text(OPERATOR, `#${refA} ${long}`)).body).toContain(`Sent to ${alice}`);
    // Every part arrived: as many as the "(i/n)" prefix says.
    await eventually(async () => {
      const got = bodies(ALICE).filter((b) => /^\(\d+\/\d+\) /.test(b));
      return got.length >= 2 && got.length === Number(/^\(\d+\/(\d+)\)/.exec(got[0]!)![1]);
    });
    const parts = bodies(ALICE).filter((b) => /^\(\d+\/\d+\) /.test(b));
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(160);
    expect(
      parts
        .map((p) => p.replace(/^\(\d+\/\d+\) /, ''))
        .join(' ')
        .replace(/\s+/g, ' '),
    ).toBe(long.replace(/\s+/g, ' '));
    expect((await transcript(alice)).filter((m) => m.role === 'operator').map((m) => m.content)).toContain(long);

    // A handback by an operator who does not hold it: allowed, and audited as who did it (the holder kept in the details).
    const holder = (await handoffOf(alice)).operator as string;
    expect(holder).toMatch(/^http:op:/);
    expect((await text(OPERATOR, `#${refA} handback`)).body).toContain(`Handed ${alice} back`);
    const h = await handoffOf(alice);
    expect(h).toMatchObject({ state: 'returned', operator: holder, returnedBy: `sms:${OPERATOR}` });
    const row = (await new AuditLedgerStore(gw.infra.store.db).entries()).find((e) => e.subject === h.id && e.action === 'handoff.returned')!;
    expect(row.actor).toBe(`sms:${OPERATOR}`);
    expect(JSON.stringify(row.details)).toContain(holder);
    expect((await api('POST', `/v1/conversations/${bob}/handback`)).status).toBe(200);
  });

  it('attack: a reference to a conversation of another channel reaches only its transcript, never a phone', async () => {
    const c = (await openaiClient(gw.url!, API_KEY, { 'x-switchboard-conversation': 'x1' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'hi from http' }],
    })) as any;
    expect(c.choices[0].message.content).toBe('agent: hi from http');
    const id = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'http' and key like '%/x1/-'`)).rows[0]!.id;
    const phones = tw.messages.length;
    expect((await text(OPERATOR, `#${id} takeover`)).body).toContain(`Taken over ${id}`);
    expect((await text(OPERATOR, `#${id} hello web user`)).body).toContain('in its transcript; its channel cannot be sent to');
    await settle();
    // Only the operator's own confirmations (TwiML replies) went anywhere.
    expect(tw.messages.slice(phones).filter((m) => m.to !== OPERATOR)).toEqual([]);
    expect((await transcript(id)).at(-1)).toMatchObject({ role: 'operator', content: 'hello web user', author: `sms:${OPERATOR}` });
    expect((await text(OPERATOR, `#${id} handback`)).body).toContain('back');
  });

  it('attack: an operator id is an operator on its own channel only (a Telegram or SMS sender with the same digits is not)', () => {
    const cfg = { operators: { discord: ['15550100001'], slack: ['T1:U9'], sms: [OPERATOR] } };
    expect(isConfiguredOperator(cfg, { channel: 'discord', id: '15550100001' })).toBe(true);
    expect(isConfiguredOperator(cfg, { channel: 'telegram', id: '15550100001' })).toBe(false);
    expect(isConfiguredOperator(cfg, { channel: 'sms', id: '15550100001' })).toBe(false);
    expect(isConfiguredOperator(cfg, { channel: 'discord', id: 'U9' })).toBe(false);
    expect(isConfiguredOperator(cfg, { channel: 'slack', workspace: 'T2', id: 'U9' })).toBe(false);
    expect(isConfiguredOperator(cfg, { channel: 'whatsapp', id: `whatsapp:${OPERATOR}` })).toBe(false);
  });
});
