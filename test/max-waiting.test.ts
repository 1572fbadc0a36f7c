/**
 * conversations.maxWaiting holds on every way in, not only chat channels: with a
 * cap of 1, while a turn runs one more message may wait and the next is refused
 * (nothing written), over the HTTP API, the MCP server and webhooks alike.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { sign } from '../kernel/hmac-signature.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, eventually, startGateway, testConfig } from './support/gateway.js';

const OPERATOR_KEY = 'op-key-maxwaiting-1';
const SECRET = 'maxwaiting-webhook-secret-0123';

describe('maxWaiting on the HTTP API, MCP and webhooks', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    process.env.SB_MAXWAIT_SECRET = SECRET;
    fake = new FakeLlm();
    await fake.start();
    // "slow ..." takes about 3 s to answer, long enough for the next messages to arrive while it runs.
    fake.respond((req) =>
      lastUserText(req.body).startsWith('slow') ? reply('still thinking about it '.repeat(6), 120) : reply(`ok: ${lastUserText(req.body)}`),
    );
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          http: { operatorKeys: [OPERATOR_KEY] },
          conversations: { maxWaiting: 1 },
          channels: { webhook: { hooks: [{ name: 'crm', secretEnv: 'SB_MAXWAIT_SECRET', callbackUrl: 'http://127.0.0.1:9/nowhere' }] } },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    delete process.env.SB_MAXWAIT_SECRET;
  });

  const running = (key: string) => eventually(async () => (await gw.infra.store.waitingCount(key)).running || null);
  const chat = (conversation: string, content: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'x-switchboard-conversation': conversation },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content }] }),
    });
  const httpKey = async (conversation: string) =>
    (await gw.infra.store.db.query<{ key: string; id: string }>(`select key, id from conversations where key like $1`, [`http/%/${conversation}/%`])).rows[0]!;
  const inboxTexts = async (conversationId: string) =>
    (await gw.infra.store.db.query<{ text: string }>(`select text from inbox where conversation_id = $1 order by id`, [conversationId])).rows.map(
      (r) => r.text,
    );

  it('over HTTP and MCP: one waits, the next is refused with a clear error, and nothing of it is written', async () => {
    const first = chat('mw-http', 'slow one');
    await eventually(async () => (await httpKey('mw-http')) ?? null);
    const conv = await httpKey('mw-http');
    await running(conv.key);
    const second = chat('mw-http', 'second, may wait');
    await eventually(async () => ((await gw.infra.store.waitingCount(conv.key)).waiting === 1 ? true : null));
    const third = await chat('mw-http', 'third, over the cap');
    expect(third.status).toBe(429);
    const body = (await third.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('conversation_full');
    expect(body.error.message).toMatch(/Too many messages are already waiting/);

    // The MCP server's send_message goes through the same rule.
    const client = new Client({ name: 'mw-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${OPERATOR_KEY}` } } }),
    );
    const viaMcp = (await client.callTool({
      name: 'send_message',
      arguments: { conversation: conv.id, text: 'from mcp, over the cap', timeoutSeconds: 5 },
    })) as { isError?: boolean; content: Array<{ text: string }> };
    expect(viaMcp.isError).toBe(true);
    expect(viaMcp.content[0]!.text).toMatch(/Too many messages are already waiting/);
    await client.close();

    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(await inboxTexts(conv.id)).toEqual(['slow one', 'second, may wait']);
  });

  it('over webhooks: 429 conversation_full beyond the cap, and a later retry is taken', async () => {
    const post = (text: string, key: string) => {
      const raw = JSON.stringify({ text, conversation: 'mw-hook', idempotencyKey: key });
      const ts = Math.floor(Date.now() / 1000);
      return fetch(`${gw.url}/v1/webhooks/crm`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-switchboard-timestamp': String(ts), 'x-switchboard-signature': sign(SECRET, ts, raw) },
        body: raw,
      });
    };
    expect((await post('slow hook one', 'k1')).status).toBe(202);
    const conv = await eventually(
      async () =>
        (await gw.infra.store.db.query<{ key: string; id: string }>(`select key, id from conversations where key like 'webhook/crm/mw-hook%'`)).rows[0] ?? null,
    );
    await running(conv.key);
    expect((await post('hook two', 'k2')).status).toBe(202);
    const refused = await post('hook three', 'k3');
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('conversation_full');
    expect(await inboxTexts(conv.id)).toEqual(['slow hook one', 'hook two']);
    // Once the queue has drained, the refused message's retry (a new signature, same key) is accepted.
    await eventually(
      async () => ((await gw.infra.store.waitingCount(conv.key)).waiting === 0 && !(await gw.infra.store.waitingCount(conv.key)).running ? true : null),
      20_000,
    );
    expect((await post('hook three', 'k3')).status).toBe(202);
  });
});
