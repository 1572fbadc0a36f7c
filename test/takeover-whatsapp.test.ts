/**
 * Human takeover from a WhatsApp operator address (issue #26), end to end: the real twilio client
 * against the fake Twilio (its 24-hour window enforced), signed webhooks, a real gateway. The same
 * "#<ref> …" relay as SMS (test/takeover-sms.test.ts, here by the handoff's short reference): the
 * request and the user's messages reach the operator address (takeover.operatorChannel on
 * whatsapp, inside the operator's own window: they wrote to the bot today), "#<ref> takeover" takes
 * it, their "#<ref> <reply>" reaches the user, "#<ref> handback" returns it. Attack: the user's own
 * "#<ref> takeover|handback" is only their message to the operator and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { eventually, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

const PUBLIC = 'https://wa.example.test/hooks';
const INBOUND = '/v1/channels/whatsapp/inbound';
const SENDER = 'whatsapp:+15550200000';
const OPERATOR = 'whatsapp:+15550209999';
const ALICE = 'whatsapp:+15550200001';

function responder(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string }>;
  if (msgs.at(-1)!.role === 'tool') return reply('I have asked a colleague to help you.');
  const text = lastUserText(req.body);
  return text.includes('a human please') ? toolCall('request_handoff', { reason: 'the user asks for a person' }) : reply(`agent: ${text}`);
}

describe('human takeover from a WhatsApp operator address', () => {
  let llm: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;

  const send = (from: string, body: string) => tw.webhook(INBOUND, tw.whatsappParams({ from, to: SENDER, body }));
  const bodies = (to: string) =>
    tw
      .sentTo(to)
      .filter((m) => !m.errorCode)
      .map((m) => m.body);
  const api = (method: string, path: string) => fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
  const handoffs = async () => ((await (await api('GET', '/v1/handoffs')).json()) as any).data as Array<{ state: string; operator: string | null }>;

  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    llm.respond(responder);
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const cfg = testConfig(
      llm,
      {},
      {
        channels: {
          whatsapp: {
            accountSid: tw.accountSid,
            authTokenEnv: 'SB_TKO_WA_TOKEN',
            publicUrl: PUBLIC,
            apiBaseUrl: tw.url,
            from: SENDER,
            sendAttempts: 2,
            retryBaseMs: 20,
            retryMaxMs: 50,
          },
        },
        access: { whatsapp: { policy: 'allowlist', allow: [ALICE, OPERATOR] } },
        approvals: { operators: { whatsapp: [OPERATOR] } },
        takeover: { operatorChannel: { channel: 'whatsapp', target: OPERATOR } },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_TKO_WA_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await llm?.close();
  });

  it('relays both ways through the operator address, and the user cannot act as the operator', async () => {
    // The operator opens their own 24-hour window (WhatsApp delivers free-form text only inside it).
    await send(OPERATOR, 'good morning');
    await eventually(async () => bodies(OPERATOR).includes('agent: good morning'), 30_000);
    await send(ALICE, 'hi');
    await eventually(async () => bodies(ALICE).includes('agent: hi'));
    await send(ALICE, 'a human please, I want to talk to a person');
    await eventually(async () => bodies(OPERATOR).some((b) => /^#[0-9a-f]{6} Human requested/.test(b)));
    const ref = /^#([0-9a-f]{6})/.exec(bodies(OPERATOR).find((b) => /Human requested/.test(b))!)![1]!;

    // Alice cannot take her own conversation: her text is passed on to the operator as hers.
    await send(ALICE, `#${ref} takeover`);
    await eventually(async () => bodies(OPERATOR).some((b) => b.startsWith(`#${ref} #${ref} takeover`)));
    expect((await handoffs())[0]).toMatchObject({ state: 'requested', operator: null });

    // The operator address takes the request; its reply reaches Alice.
    expect((await send(OPERATOR, `#${ref} takeover`)).body).toContain('Taken over');
    expect((await send(OPERATOR, `#${ref} Hello Alice, Sam from support here.`)).body).toContain('Sent to');
    await eventually(async () => bodies(ALICE).includes('Hello Alice, Sam from support here.'));
    expect((await handoffs())[0]).toMatchObject({ state: 'taken', operator: `whatsapp:${OPERATOR}` });
    const asked = llm.requests.length;
    await send(ALICE, 'thanks Sam, order 12');
    await eventually(async () => bodies(OPERATOR).some((b) => b.startsWith(`#${ref} thanks Sam, order 12`)));
    expect(llm.requests.length).toBe(asked);
    await send(ALICE, `#${ref} handback`);
    await eventually(async () => bodies(OPERATOR).some((b) => b.startsWith(`#${ref} #${ref} handback`)));
    expect((await handoffs())[0]).toMatchObject({ state: 'taken' });

    expect((await send(OPERATOR, `#${ref} handback`)).body).toContain('back to the agent');
    expect(await handoffs()).toEqual([]);
    await send(ALICE, 'ok bye');
    await eventually(async () => bodies(ALICE).includes('agent: ok bye'));
  });
});
