/**
 * Taking over a conversation while the agent is answering it (issue #26 follow-up), on both
 * backends, over the HTTP API with the real gateway and the fake model streaming slowly:
 * - the running turn is stopped (the control topic /stop and an interrupting message use): the
 *   user never gets the agent's final answer, only what it had streamed, and the transcript goes on
 *   with the takeover (the operator's message after the stopped reply);
 * - a request whose message was still waiting in the inbox (it went to the operator with the
 *   takeover) is answered with the takeover notice, on /v1/chat/completions and /v1/responses,
 *   instead of waiting for its timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { NOTICE } from '../src/handoffs/text.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { backendSetups } from './support/backends.js';
import { API_KEY, eventually, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

const PUBLIC = 'https://sms.example.test/hooks';
const INBOUND = '/v1/channels/sms/inbound';
const TWILIO_NUMBER = '+15550100000';
const USER = '+15550100001';

const LONG = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');

describe.each(backendSetups())('taking over a conversation mid-turn: $name', (setup) => {
  let llm: FakeLlm;
  let gw: Gateway;
  let tw: FakeTwilio;

  const api = (method: string, path: string, body?: unknown, key = TEST_OPERATOR_KEY) =>
    fetch(`${gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  // Plain fetch (no SDK retries): a 504 timeout is seen as it is.
  const chat = (conversation: string, text: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'x-switchboard-conversation': conversation },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: text }] }),
    });
  const respond = (conversation: string, text: string) =>
    fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'x-switchboard-conversation': conversation },
      body: JSON.stringify({ model: 'default', input: text }),
    });
  const conversationOf = async (name: string) =>
    (
      await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'http' and key like $1 order by created_at limit 1`, [
        `http/%/${name}/-`,
      ])
    ).rows[0]?.id;
  const running = async (name: string) => {
    const id = await conversationOf(name);
    return id ? (await gw.infra.store.turns(id)).some((t) => t.status === 'running') : false;
  };
  const waitingRows = async (name: string) => {
    const id = await conversationOf(name);
    if (!id) return 0;
    return Number(
      (await gw.infra.store.db.query<{ n: string }>('select count(*) as n from inbox where conversation_id = $1 and turn_id is null', [id])).rows[0]!.n,
    );
  };

  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    // "long …" streams slowly (about 6 s); anything else is answered at once.
    llm.respond((req) => (lastUserText(req.body).startsWith('long') ? reply(LONG, 30) : reply(`agent: ${lastUserText(req.body)}`)));
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const cfg = testConfig(llm, await setup.backend(), {
      // Short enough that a request left waiting fails the test with a 504 rather than hanging it.
      http: { requestTimeoutMs: 20_000 },
      channels: {
        sms: { accountSid: tw.accountSid, authTokenEnv: 'SB_TKO_MID_TOKEN', publicUrl: PUBLIC, apiBaseUrl: tw.url, retryBaseMs: 20, retryMaxMs: 50 },
      },
      access: { sms: { policy: 'allowlist', allow: [USER] } },
    });
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_TKO_MID_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
  });
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await llm?.close();
    await setup.cleanup();
  });

  it("the running turn is stopped: the user never gets the agent's final answer, the transcript goes on with the operator", async () => {
    const pending = chat('mid1', 'long story please');
    await eventually(() => running('mid1'));
    const id = (await conversationOf('mid1'))!;
    const taken = await api('POST', `/v1/conversations/${id}/takeover`);
    expect(taken.status).toBe(201);
    const handoff = ((await taken.json()) as any).handoff;

    const r = await pending;
    expect(r.status).toBe(200);
    const content: string = ((await r.json()) as any).choices[0].message.content;
    // What it had streamed may stay; the end of the answer never comes.
    expect(content).not.toContain('w199');
    expect(content).not.toBe(LONG);
    const turns = await gw.infra.store.turns(id);
    expect(turns.at(-1)).toMatchObject({ status: 'done', finishReason: 'aborted' });

    // The operator writes; the transcript has the stopped reply, then the operator, and never the whole answer.
    expect((await api('POST', `/v1/conversations/${id}/operator-messages`, { text: 'Dana here, I have this.' })).status).toBe(201);
    const messages = ((await (await api('GET', `/v1/conversations/${id}/messages`)).json()) as any).data as Array<{ role: string; content: string }>;
    expect(messages.at(-1)).toMatchObject({ role: 'operator', content: 'Dana here, I have this.', author: handoff.operator });
    expect(messages.some((m) => m.role === 'assistant' && m.content.includes('w199'))).toBe(false);
    // A later message goes to the operator: the notice, no model call.
    const asked = llm.requests.length;
    const later = (await (await chat('mid1', 'hello?')).json()) as any;
    expect(later.choices[0].message.content).toBe(NOTICE.taken);
    expect(llm.requests.length).toBe(asked);
  });

  it('on SMS (the reply is sent once it is whole) the stopped turn sends the user nothing after the takeover', async () => {
    await tw.webhook(INBOUND, tw.inboundParams({ from: USER, to: TWILIO_NUMBER, body: 'long text about my parcel' }));
    const id = await eventually(async () => {
      const r = await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'sms'`);
      return r.rows[0] && (await gw.infra.store.turns(r.rows[0].id)).some((t) => t.status === 'running') ? r.rows[0].id : null;
    });
    expect((await api('POST', `/v1/conversations/${id}/takeover`)).status).toBe(201);
    await eventually(async () => (await gw.infra.store.turns(id)).at(-1)?.finishReason === 'aborted', 20_000);
    // The operator's message arrives; nothing of the agent's ever did.
    expect((await api('POST', `/v1/conversations/${id}/operator-messages`, { text: 'Dana here about your parcel.' })).status).toBe(201);
    await eventually(async () => tw.phone(USER).some((m) => m.body === 'Dana here about your parcel.'));
    expect(tw.phone(USER).map((m) => m.body)).toEqual(['Dana here about your parcel.']);
  });

  it('a chat completion whose message waited in the inbox is answered with the takeover notice, not left to time out', async () => {
    const first = chat('mid2', 'long answer wanted');
    await eventually(() => running('mid2'));
    const second = chat('mid2', 'and one more thing');
    await eventually(async () => (await waitingRows('mid2')) === 1);
    const id = (await conversationOf('mid2'))!;
    const handoff = ((await (await api('POST', `/v1/conversations/${id}/takeover`)).json()) as any).handoff;

    const r = await second;
    expect(r.status).toBe(200);
    const body = (await r.json()) as any;
    expect(body.choices[0].message.content).toBe(NOTICE.taken);
    expect(body.switchboard.handoff).toMatchObject({ id: handoff.id, state: 'taken' });
    expect((await first).status).toBe(200);
    // The waiting message is the operator's to answer: in the transcript as the user's.
    const messages = ((await (await api('GET', `/v1/conversations/${id}/messages`)).json()) as any).data as Array<{ role: string; content: string }>;
    expect(messages.some((m) => m.role === 'user' && m.content === 'and one more thing')).toBe(true);
  });

  it('a streamed chat completion whose message waited in the inbox streams the notice and ends', async () => {
    const first = chat('mid4', 'long tale please');
    await eventually(() => running('mid4'));
    const second = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'x-switchboard-conversation': 'mid4' },
      body: JSON.stringify({ model: 'default', stream: true, messages: [{ role: 'user', content: 'still there?' }] }),
    });
    await eventually(async () => (await waitingRows('mid4')) === 1);
    const id = (await conversationOf('mid4'))!;
    const handoff = ((await (await api('POST', `/v1/conversations/${id}/takeover`)).json()) as any).handoff;
    const r = await second;
    expect(r.status).toBe(200);
    const events = (await r.text())
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
      .map((l) => JSON.parse(l.slice(6)));
    expect(events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('')).toBe(NOTICE.taken);
    expect(events.find((e) => e.switchboard?.handoff)?.switchboard.handoff).toMatchObject({ id: handoff.id, state: 'taken' });
    expect((await first).status).toBe(200);
  });

  it('a /v1/responses request whose message waited in the inbox gets the notice too', async () => {
    const first = respond('mid3', 'long reply please');
    await eventually(() => running('mid3'));
    const second = respond('mid3', 'are you there?');
    await eventually(async () => (await waitingRows('mid3')) === 1);
    const id = (await conversationOf('mid3'))!;
    const handoff = ((await (await api('POST', `/v1/conversations/${id}/takeover`)).json()) as any).handoff;

    const r = await second;
    expect(r.status).toBe(200);
    const body = (await r.json()) as any;
    expect(body.status).toBe('completed');
    expect(body.output_text ?? JSON.stringify(body.output)).toContain(NOTICE.taken);
    expect(body.switchboard.handoff).toMatchObject({ id: handoff.id, state: 'taken' });
    expect((await first).status).toBe(200);
  });
});
