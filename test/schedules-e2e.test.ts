/**
 * A schedule end to end on the embedded gateway: an operator schedules a one-off message for a
 * webhook conversation, the worker fires it through the ordinary drain, the reply reaches the
 * conversation's callback and the run reads as delivered; a run the model declines with
 * NOTHING_TO_SAY sends nothing and reads as nothing_to_say.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { eventually, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';
import { WebhookHook } from './support/webhook-hook.js';

describe('a scheduled message end to end', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  const hook = new WebhookHook('crm', 'schedules-e2e-secret-0123456789abc', 'SB_SCHED_SECRET');
  const received = hook.received;
  beforeAll(async () => {
    await hook.start();
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const text = lastUserText(req.body);
      if (text.includes('Only if there is news')) return reply('NOTHING_TO_SAY');
      if (text.includes('Remind them')) return reply('Reminder: the call is at 10.');
      return reply('hello back');
    });
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          channels: {
            webhook: {
              hooks: [hook.config()],
            },
          },
          schedules: { pollMs: 100 },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await hook.close();
  });

  const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${gw.url}${path}`, {
      method: init.method ?? (init.body ? 'POST' : 'GET'),
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      ...(init.body ? { body: JSON.stringify(init.body) } : {}),
    });

  it('fires, delivers through the conversation channel, and reports the status', async () => {
    const first = await hook.send(gw.url!, { text: 'hi', conversation: 'order-42', sender: 'crm' });
    expect(first.status).toBe(202);
    const { conversation } = (await first.json()) as { conversation: string };
    await eventually(async () => received.length === 1);
    const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'webhook'`)).rows[0]!.id;
    expect(conversation).toBeTruthy();

    const created = await api('/v1/schedules', { body: { conversation: conv, at: new Date().toISOString(), prompt: 'Remind them of the call.' } });
    expect(created.status).toBe(201);
    const s = (await created.json()) as { id: string };
    await eventually(async () => received.some((r) => r.text === 'Reminder: the call is at 10.'));
    const shown = await eventually(async () => {
      const b = (await (await api(`/v1/schedules/${s.id}`)).json()) as { lastRun: { status: string } | null };
      return b.lastRun?.status === 'delivered' ? b : null;
    });
    expect(shown.lastRun!.status).toBe('delivered');

    const quiet = (await (
      await api('/v1/schedules', { body: { conversation: conv, at: new Date().toISOString(), prompt: 'Only if there is news.' } })
    ).json()) as {
      id: string;
    };
    const declined = await eventually(async () => {
      const list = (await (await api('/v1/schedules')).json()) as { data: Array<{ id: string; lastRun: { status: string } | null }> };
      const mine = list.data.find((x) => x.id === quiet.id);
      return mine?.lastRun?.status === 'nothing_to_say' ? mine : null;
    });
    expect(declined.lastRun!.status).toBe('nothing_to_say');
    await new Promise((r) => setTimeout(r, 300));
    expect(received.map((r) => r.text)).toEqual(['hello back', 'Reminder: the call is at 10.']);
  }, 30_000);
});
