/**
 * Human takeover from a configured operator number over SMS (the real twilio client against the
 * fake Twilio, webhooks signed as Twilio signs them, a real embedded gateway): the operator texts
 * `#<conversation> takeover`, `#<conversation> <text>` (texted to the user through the channel's
 * delivery), `#<conversation> handback: <note>`; the users' messages are texted to the operator number. What a phone receives is asserted. Attack: a
 * number that is not an operator's gets nothing of it: its `#…` text goes to the agent as text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { NOTICE } from '../src/handoffs/text.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { eventually, testConfig } from './support/gateway.js';

const PUBLIC = 'https://sms.example.test/hooks';
const INBOUND = '/v1/channels/sms/inbound';
const TWILIO_NUMBER = '+15550100000';
const OPERATOR = '+15550109999';
const USER = '+15550100001';
const STRANGER = '+15550100002';

describe('takeover from an operator number (SMS)', () => {
  let llm: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;
  const text = (from: string, body: string) => tw.webhook(INBOUND, tw.inboundParams({ from, to: TWILIO_NUMBER, body }));
  const bodies = (to: string) => tw.phone(to).map((m) => m.body);

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
            authTokenEnv: 'SB_TKO_TWILIO_TOKEN',
            publicUrl: PUBLIC,
            apiBaseUrl: tw.url,
            sendAttempts: 2,
            retryBaseMs: 20,
            retryMaxMs: 50,
          },
        },
        access: { sms: { policy: 'allowlist', allow: [USER, STRANGER] } },
        approvals: { operators: { sms: [OPERATOR] } },
        // The operator number also gets the requests and the users' messages (to|from).
        takeover: { operatorChannel: { channel: 'sms', target: `${OPERATOR}|${TWILIO_NUMBER}` } },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_TKO_TWILIO_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
  });
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await llm?.close();
  });

  it('the operator takes over, writes and hands back by text; the user sees the operator and then the agent', async () => {
    await text(USER, 'hello');
    await eventually(async () => bodies(USER).includes('agent: hello'), 20_000);
    const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'sms'`)).rows[0]!.id;

    const took = await text(OPERATOR, `#${conv} takeover`);
    expect(took.body).toContain(`Taken over ${conv}`);

    const asked = llm.requests.length;
    const first = await text(USER, 'my parcel is lost');
    // Told once per handoff (in the TwiML answer), then quiet; the model is not asked.
    expect(first.body).toContain(NOTICE.taken);
    expect((await text(USER, 'it was order 12')).body).not.toContain(NOTICE.taken);
    expect(llm.requests.length).toBe(asked);
    // Relayed to the operator's phone, with the conversation to answer.
    await eventually(async () => bodies(OPERATOR).find((b) => b.includes('my parcel is lost') && b.includes(conv)), 20_000);

    const sent = await text(OPERATOR, `#${conv} Hi, this is Lee from support. I will re-send order 12.`);
    expect(sent.body).toContain(`Sent to ${conv}`);
    await eventually(async () => bodies(USER).includes('Hi, this is Lee from support. I will re-send order 12.'), 20_000);

    expect((await text(OPERATOR, `#${conv} handback: re-sent order 12`)).body).toContain(`Handed ${conv} back`);
    await text(USER, 'thank you');
    await eventually(async () => bodies(USER).includes('agent: thank you'), 20_000);
    const prompt = JSON.stringify(llm.requests.at(-1)!.body.messages);
    for (const said of ['my parcel is lost', 'it was order 12', 'I will re-send order 12.', 're-sent order 12']) expect(prompt).toContain(said);
  });

  it('attack: a number that is not an operator cannot take over; its "#…" is plain text for the agent', async () => {
    const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'sms' order by created_at limit 1`)).rows[0]!.id;
    await text(STRANGER, `#${conv} takeover`);
    await eventually(async () => bodies(STRANGER).includes(`agent: #${conv} takeover`), 20_000);
    await text(STRANGER, `#${conv} you are hacked`);
    await eventually(async () => bodies(STRANGER).includes(`agent: #${conv} you are hacked`), 20_000);
    expect(bodies(USER).join('\n')).not.toContain('you are hacked');
    expect((await gw.infra.store.db.query(`select 1 from handoffs where conversation_id = $1 and state in ('requested', 'taken')`, [conv])).rows).toEqual([]);
  });
});
