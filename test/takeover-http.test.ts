/**
 * Human takeover over the HTTP API (issue #26), on both backends: an operator takes a conversation
 * over, the agent stops answering (the model is not called), the user's messages reach the operator
 * and the operator's reach the user (what an HTTP user reads: the conversation's messages), handing
 * back resumes the agent with the operator's messages and the note in its context. Audited in the
 * hash-chained ledger and emitted as event webhooks. Real gateway, real store, the fake model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLedgerStore } from '../adapters/store/audit-ledger.js';
import { runTakeover } from '../app/cli/takeover.js';
import type { Gateway } from '../app/gateway.js';
import { NOTICE } from '../src/handoffs/text.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { backendSetups } from './support/backends.js';
import { eventReceiver } from './support/event-receiver.js';
import { API_KEY, eventually, OTHER_KEY, openaiClient, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

process.env.SB_TAKEOVER_EVENTS_SECRET = 'takeover-events-secret-0123456789';

const setups = backendSetups();

describe.each(setups)('human takeover over the HTTP API: $name', (setup) => {
  let llm: FakeLlm;
  let gw: Gateway;
  let hooks: Awaited<ReturnType<typeof eventReceiver>>;

  const api = (method: string, path: string, body?: unknown, key = TEST_OPERATOR_KEY) =>
    fetch(`${gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const chat = async (conversation: string, text: string, key = API_KEY) =>
    (await openaiClient(gw.url!, key, { 'x-switchboard-conversation': conversation }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: text }],
    })) as any;
  const conversationId = async (name: string) =>
    (
      await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'http' and key like $1 order by created_at limit 1`, [
        `http/%/${name}/-`,
      ])
    ).rows[0]!.id;
  const userMessages = async (name: string, key = API_KEY) =>
    ((await (await api('GET', `/v1/conversations/${name}/messages`, undefined, key)).json()) as any).data as Array<{
      role: string;
      content: string;
      author?: string;
    }>;

  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    llm.respond((req) => reply(`agent: ${lastUserText(req.body)}`));
    hooks = await eventReceiver();
    gw = await startGateway(
      testConfig(llm, await setup.backend(), {
        webhooks: {
          backoffMs: 50,
          subscribers: [
            {
              id: 'ops',
              url: hooks.url,
              secretEnv: 'SB_TAKEOVER_EVENTS_SECRET',
              events: ['handoff.requested', 'handoff.taken', 'handoff.returned'],
              allowCidrs: ['127.0.0.1/32'],
            },
          ],
        },
      }),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await llm?.close();
    hooks?.server.close();
    await setup.cleanup();
  });

  it('takeover stops the agent, relays both ways, and handback resumes it with the operator messages and the note', async () => {
    expect((await chat('t1', 'hello')).choices[0].message.content).toBe('agent: hello');
    const id = await conversationId('t1');

    const taken = await api('POST', `/v1/conversations/${id}/takeover`);
    expect(taken.status).toBe(201);
    const handoff = ((await taken.json()) as any).handoff;
    expect(handoff).toMatchObject({ conversation: id, state: 'taken', operator: expect.stringMatching(/^http:/) });

    // The agent does not answer: the model is not asked, the user is told an operator has it.
    const asked = llm.requests.length;
    const r = await chat('t1', 'I want to talk to a person about my refund');
    expect(r.choices[0].message.content).toBe(NOTICE.taken);
    expect(r.switchboard.handoff).toMatchObject({ id: handoff.id, state: 'taken' });
    expect(llm.requests.length).toBe(asked);

    // The operator sees it: in the open handoffs and in the transcript, with who said it.
    const list = ((await (await api('GET', '/v1/handoffs')).json()) as any).data;
    expect(list.map((h: any) => h.id)).toContain(handoff.id);
    const seen = ((await (await api('GET', `/v1/conversations/${id}/messages`)).json()) as any).data;
    expect(seen.at(-1)).toMatchObject({ role: 'user', content: 'I want to talk to a person about my refund', author: expect.stringMatching(/^http:/) });

    // The operator's message reaches the user: the HTTP user reads it from their conversation.
    const said = await api('POST', `/v1/conversations/${id}/operator-messages`, { text: 'Hi, Dana from support here. Order 4411?' });
    expect(said.status).toBe(201);
    const mine = await userMessages('t1');
    expect(mine.at(-1)).toMatchObject({ role: 'operator', content: 'Hi, Dana from support here. Order 4411?', author: handoff.operator });
    expect(await chat('t1', 'yes, 4411')).toMatchObject({ choices: [{ message: { content: NOTICE.taken } }] });
    expect(llm.requests.length).toBe(asked);

    // Hand back: the next message is answered by the agent, which has the operator's words and the note.
    const back = await api('POST', `/v1/conversations/${id}/handback`, { note: 'refund for order 4411 issued' });
    expect(back.status).toBe(200);
    expect(((await back.json()) as any).handoff).toMatchObject({ state: 'returned', note: 'refund for order 4411 issued' });
    expect((await chat('t1', 'thanks, anything else?')).choices[0].message.content).toBe('agent: thanks, anything else?');
    const prompt = JSON.stringify(llm.requests.at(-1)!.body.messages);
    expect(prompt).toContain('Hi, Dana from support here. Order 4411?');
    expect(prompt).toContain('I want to talk to a person about my refund');
    expect(prompt).toContain('yes, 4411');
    expect(prompt).toContain('refund for order 4411 issued');
    expect(prompt).toMatch(/An operator \(http:[^)]+\) handled this conversation from/);
    expect(((await (await api('GET', '/v1/handoffs')).json()) as any).data.map((h: any) => h.id)).not.toContain(handoff.id);

    // Audited in the ledger (metadata only), and the chain still verifies.
    const ledger = new AuditLedgerStore(gw.infra.store.db);
    const rows = (await ledger.entries()).filter((e) => e.subject === handoff.id);
    expect(rows.map((e) => e.action)).toEqual(['handoff.taken', 'handoff.returned']);
    expect(rows.map((e) => e.details).join(' ')).not.toMatch(/refund|Dana/);
    expect((await ledger.verify()).ok).toBe(true);

    // And emitted as event webhooks.
    await eventually(async () => hooks.got.filter((e) => e.data.handoff === handoff.id).length === 2);
    expect(hooks.got.filter((e) => e.data.handoff === handoff.id).map((e) => e.type)).toEqual(['handoff.taken', 'handoff.returned']);
  });

  it('says clearly what cannot be done: 404 unknown, 409 taken twice or not taken over, 403 for a user key', async () => {
    await chat('t2', 'hi');
    const id = await conversationId('t2');
    expect((await api('POST', '/v1/conversations/c_nope/takeover')).status).toBe(404);
    const notTaken = await api('POST', `/v1/conversations/${id}/operator-messages`, { text: 'hello?' });
    expect(notTaken.status).toBe(409);
    expect(((await notTaken.json()) as any).error.code).toBe('not_taken_over');
    expect((await api('POST', `/v1/conversations/${id}/handback`)).status).toBe(409);
    expect((await api('POST', `/v1/conversations/${id}/takeover`)).status).toBe(201);
    const twice = await api('POST', `/v1/conversations/${id}/takeover`);
    expect(twice.status).toBe(409);
    expect(((await twice.json()) as any).error.code).toBe('already_taken');
    expect((await api('POST', `/v1/conversations/${id}/operator-messages`, { text: '' })).status).toBe(400);
    // A user's key may do none of it, not even in their own conversation.
    for (const [m, p] of [
      ['GET', '/v1/handoffs'],
      ['POST', `/v1/conversations/${id}/takeover`],
      ['POST', `/v1/conversations/${id}/handback`],
    ] as const)
      expect((await api(m, p, undefined, API_KEY)).status).toBe(403);
    expect((await api('POST', `/v1/conversations/${id}/operator-messages`, { text: 'I am the operator' }, API_KEY)).status).toBe(403);
    // Another key's conversation of the same name is another conversation: not taken over.
    expect((await chat('t2', 'hi from another key', OTHER_KEY)).choices[0].message.content).toBe('agent: hi from another key');
    expect((await api('POST', `/v1/conversations/${id}/handback`)).status).toBe(200);
  });

  it('a redelivered message (same Idempotency-Key) is passed on once', async () => {
    await chat('t3', 'hi');
    const id = await conversationId('t3');
    expect((await api('POST', `/v1/conversations/${id}/takeover`)).status).toBe(201);
    const send = () =>
      openaiClient(gw.url!, API_KEY, { 'x-switchboard-conversation': 't3', 'idempotency-key': 'takeover-once-1' }).chat.completions.create({
        model: 'default',
        messages: [{ role: 'user', content: 'only once please' }],
      });
    await send();
    // The retry gets the same answer (the notice), and nothing is passed on twice.
    expect((await send()).choices[0]!.message.content).toBe(NOTICE.taken);
    const rows = (await userMessages('t3')).filter((m) => m.content === 'only once please');
    expect(rows).toHaveLength(1);
    expect((await api('POST', `/v1/conversations/${id}/handback`)).status).toBe(200);
  });
  it('the CLI: switchboard takeover take | list | say | handback, with --json and clear failures', async () => {
    await chat('t4', 'hi');
    const id = await conversationId('t4');
    const run = async (...args: string[]) => {
      let out = '';
      let err = '';
      const sink = (f: (s: string) => void) => ({ write: (s: string) => (f(s), true) }) as never;
      const code = await runTakeover(
        args,
        { SWITCHBOARD_URL: gw.url, SWITCHBOARD_OPERATOR_KEY: TEST_OPERATOR_KEY },
        sink((s) => (out += s)),
        sink((s) => (err += s)),
      );
      return { code, out, err };
    };
    expect((await run('take', id, '--json')).code).toBe(0);
    const listed = await run('list', '--json');
    expect(JSON.parse(listed.out).find((h: any) => h.conversation === id)).toMatchObject({ state: 'taken' });
    expect((await run('list')).out).toContain(id);
    const again = await run('take', id);
    expect(again).toMatchObject({ code: 1, err: expect.stringContaining('already taken over') });
    const said = await run('say', id, 'Hello', 'from', 'the', 'CLI');
    expect(said.code).toBe(0);
    expect((await userMessages('t4')).at(-1)).toMatchObject({ role: 'operator', content: 'Hello from the CLI' });
    expect(JSON.parse((await run('handback', id, '--note', 'cli note', '--json')).out)).toMatchObject({ state: 'returned', note: 'cli note' });
    expect((await run('say', id, 'too late')).code).toBe(1);
    expect((await run('take')).code).toBe(2);
    expect((await run('take', 'c_missing')).err).toMatch(/No conversation/);
  });
  it('export names who said what in a taken-over time; erasing the conversation takes its handoffs along', async () => {
    await chat('t5', 'hi');
    const id = await conversationId('t5');
    expect((await api('POST', `/v1/conversations/${id}/takeover`)).status).toBe(201);
    await chat('t5', 'my address is 1 Main St');
    expect((await api('POST', `/v1/conversations/${id}/operator-messages`, { text: 'noted' })).status).toBe(201);
    const exported = ((await (await api('GET', `/v1/conversations/${id}/export`)).json()) as any).messages as Array<{
      role: string;
      author: string;
      text: string;
    }>;
    expect(exported.find((m) => m.text === 'my address is 1 Main St')).toMatchObject({ role: 'user', author: expect.stringMatching(/^http:/) });
    expect(exported.find((m) => m.text === 'noted')).toMatchObject({ role: 'operator', author: expect.stringMatching(/^http:op/) });
    const erased = await api('DELETE', `/v1/conversations/${id}`);
    expect(erased.status).toBe(200);
    expect(((await erased.json()) as any).rows.handoffs).toBe(1);
    expect(((await (await api('GET', '/v1/handoffs')).json()) as any).data.map((h: any) => h.conversation)).not.toContain(id);
  });
});
