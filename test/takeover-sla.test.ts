/**
 * The agent asks for a human (request_handoff, called by the scripted model) and nobody takes it
 * within takeover.slaMinutes: the user is told, and the agent resumes (onSlaExpiry: resume) or the
 * conversation keeps waiting for an operator (wait). On both backends, over the HTTP API; the
 * webhooks arrive, the ledger has the rows and still verifies. That a due request fires once
 * however many workers sweep at once is the store's contract (test/ports.contract.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLedgerStore } from '../adapters/store/audit-ledger.js';
import type { Gateway } from '../app/gateway.js';
import { NOTICE } from '../src/handoffs/text.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { backendSetups } from './support/backends.js';
import { eventReceiver } from './support/event-receiver.js';
import { API_KEY, eventually, openaiClient, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

process.env.SB_TKO_SLA_SECRET = 'takeover-sla-secret-0123456789';

const cases = backendSetups().flatMap((setup) =>
  (['resume', 'wait'] as const).map((onSlaExpiry) => ({ setup, onSlaExpiry, name: `${setup.name}, ${onSlaExpiry}` })),
);

describe.each(cases)('request_handoff and its SLA: $name', ({ setup, onSlaExpiry }) => {
  let llm: FakeLlm;
  let gw: Gateway;
  let hooks: Awaited<ReturnType<typeof eventReceiver>>;

  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const chat = async (text: string) =>
    (await openaiClient(gw.url!, API_KEY, { 'x-switchboard-conversation': 'sla-1' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: text }],
    })) as any;

  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    llm.respond((req) => {
      const last = (req.body.messages as Array<{ role: string }>).at(-1)!;
      if (last.role === 'tool') return reply('I have asked a human to join us.');
      const text = lastUserText(req.body);
      return text.includes('a human please') ? toolCall('request_handoff', { reason: 'the user asks for a person', urgency: 'high' }) : reply(`agent: ${text}`);
    });
    hooks = await eventReceiver();
    gw = await startGateway(
      testConfig(llm, await setup.backend(), {
        // 0.005 minutes: 300 ms, swept every 100 ms.
        takeover: { slaMinutes: 0.005, onSlaExpiry, pollMs: 100 },
        webhooks: {
          backoffMs: 50,
          subscribers: [
            {
              id: 'ops',
              url: hooks.url,
              secretEnv: 'SB_TKO_SLA_SECRET',
              events: ['handoff.requested', 'handoff.taken', 'handoff.returned', 'handoff.expired'],
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

  it(`the agent asks for a human; past the SLA the user is told and the agent ${onSlaExpiry === 'resume' ? 'resumes' : 'keeps waiting'}`, async () => {
    expect((await chat('I want a human please')).choices[0].message.content).toBe('I have asked a human to join us.');
    const requested = await eventually(async () => hooks.got.find((e) => e.type === 'handoff.requested'));
    const handoff = requested.data.handoff as string;
    expect(requested.data).toMatchObject({ urgency: 'high', state: 'requested', requestedBy: expect.stringMatching(/^agent:t_/) });

    // The SLA passes with nobody taking it: fired once, the user told (the HTTP user reads it in the conversation).
    const expired = await eventually(async () => hooks.got.find((e) => e.type === 'handoff.expired' && e.data.handoff === handoff));
    expect(expired.data.resumed).toBe(onSlaExpiry === 'resume');
    const messages = ((await (await api('GET', `/v1/conversations/${expired.data.conversation}/messages`)).json()) as any).data;
    expect(messages.at(-1).content).toContain(onSlaExpiry === 'resume' ? NOTICE.slaResume : NOTICE.slaWait);
    const listed = ((await (await api('GET', '/v1/handoffs?recent=10')).json()) as any).data.find((h: any) => h.id === handoff);
    expect(listed).toMatchObject({ state: onSlaExpiry === 'resume' ? 'expired' : 'requested', slaFiredAt: expect.any(String) });

    const asked = llm.requests.length;
    if (onSlaExpiry === 'resume') {
      expect((await chat('are you still there?')).choices[0].message.content).toBe('agent: are you still there?');
      expect(JSON.stringify(llm.requests.at(-1)!.body.messages)).toContain('No operator took the request for a human');
    } else {
      // Still waiting for an operator: passed on, not answered by the agent.
      const r = await chat('are you still there?');
      expect(r.choices[0].message.content).toBe(NOTICE.requested);
      expect(llm.requests.length).toBe(asked);
      // An operator takes the request late, and hands back.
      const taken = await api('POST', `/v1/conversations/${expired.data.conversation}/takeover`);
      expect(taken.status).toBe(201);
      expect(((await taken.json()) as any).handoff.id).toBe(handoff);
      expect((await api('POST', `/v1/conversations/${expired.data.conversation}/handback`, { note: 'sorted' })).status).toBe(200);
      expect((await chat('thanks')).choices[0].message.content).toBe('agent: thanks');
    }

    const ledger = new AuditLedgerStore(gw.infra.store.db);
    const actions = (await ledger.entries()).filter((e) => e.subject === handoff).map((e) => e.action);
    expect(actions).toEqual(
      onSlaExpiry === 'resume' ? ['handoff.requested', 'handoff.expired'] : ['handoff.requested', 'handoff.expired', 'handoff.taken', 'handoff.returned'],
    );
    expect((await ledger.verify()).ok).toBe(true);
    const expiredEvents = hooks.got.filter((e) => e.type === 'handoff.expired' && e.data.handoff === handoff);
    expect(expiredEvents).toHaveLength(1);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_handoffs_total\{outcome="expired"\} 1/);
    expect(metrics).toMatch(/switchboard_handoffs_total\{outcome="requested"\} 1/);
  });
});
