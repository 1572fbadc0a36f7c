/**
 * A schedule end to end on the embedded gateway: an operator schedules a one-off message for a
 * webhook conversation, the worker fires it through the ordinary drain, the reply reaches the
 * conversation's callback and the run reads as delivered; a run the model declines with
 * NOTHING_TO_SAY sends nothing and reads as nothing_to_say.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { sign } from '../kernel/hmac-signature.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { eventually, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

const SECRET = 'schedules-e2e-secret-0123456789abc';

describe('a scheduled message end to end', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let callback: Server;
  const received: Array<{ text: string }> = [];
  beforeAll(async () => {
    process.env.SB_SCHED_SECRET = SECRET;
    callback = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
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
              hooks: [
                {
                  name: 'crm',
                  secretEnv: 'SB_SCHED_SECRET',
                  callbackUrl: `http://127.0.0.1:${(callback.address() as AddressInfo).port}/cb`,
                  allowCallbackCidrs: ['127.0.0.0/8'],
                },
              ],
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
    await new Promise((r) => callback?.close(r));
    delete process.env.SB_SCHED_SECRET;
  });

  const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${gw.url}${path}`, {
      method: init.method ?? (init.body ? 'POST' : 'GET'),
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      ...(init.body ? { body: JSON.stringify(init.body) } : {}),
    });

  it('fires, delivers through the conversation channel, and reports the status', async () => {
    const raw = JSON.stringify({ text: 'hi', conversation: 'order-42', sender: 'crm' });
    const ts = Math.floor(Date.now() / 1000);
    const first = await fetch(`${gw.url}/v1/webhooks/crm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-switchboard-timestamp': String(ts), 'x-switchboard-signature': sign(SECRET, ts, raw) },
      body: raw,
    });
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
