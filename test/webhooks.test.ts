/** Webhooks in (signed, replay-proof, idempotent, callback through the SSRF guard) and out (events, retried, dead-lettered). */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { sign, verify } from '../kernel/hmac-signature.js';
import { packageRoot } from '../kernel/paths.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { eventually, openaiClient, startGateway, testConfig } from './support/gateway.js';

const SECRET = 'webhook-secret-0123456789';
const OPERATOR_KEY = 'op-key-hooks-0001';

interface Received {
  body: any;
  headers: IncomingMessage['headers'];
}

async function receiver(status: () => number): Promise<{ server: Server; url: string; got: Received[] }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const code = status();
      if (code === 200) got.push({ body: JSON.parse(raw), headers: req.headers });
      res.writeHead(code).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, got };
}

describe('webhooks', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let callback: Awaited<ReturnType<typeof receiver>>;
  let flaky: Awaited<ReturnType<typeof receiver>>;
  let dead: Awaited<ReturnType<typeof receiver>>;
  let gone: Awaited<ReturnType<typeof receiver>>;
  let flakyCalls = 0;
  let goneCalls = 0;
  beforeAll(async () => {
    process.env.SB_HOOK_SECRET = SECRET;
    process.env.SB_EVENTS_SECRET = 'events-secret-0123456789';
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`hooked: ${lastUserText(req.body)}`));
    callback = await receiver(() => 200);
    flaky = await receiver(() => (++flakyCalls <= 3 ? 500 : 200));
    dead = await receiver(() => 503);
    gone = await receiver(() => (++goneCalls, 410));
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          http: { operatorKeys: [OPERATOR_KEY] },
          channels: {
            webhook: {
              hooks: [
                { name: 'crm', secretEnv: 'SB_HOOK_SECRET', callbackUrl: callback.url, allowCallbackCidrs: ['127.0.0.1/32'] },
                { name: 'internal', secretEnv: 'SB_HOOK_SECRET', callbackUrl: 'http://127.0.0.1:9/nowhere' },
              ],
              callbackBackoffMs: 50,
            },
          },
          webhooks: {
            maxAttempts: 4,
            backoffMs: 50,
            subscribers: [
              { id: 'flaky', url: flaky.url, secretEnv: 'SB_EVENTS_SECRET', events: ['turn.completed'], allowCidrs: ['127.0.0.1/32'] },
              { id: 'dead', url: dead.url, secretEnv: 'SB_EVENTS_SECRET', events: ['turn.completed'], allowCidrs: ['127.0.0.1/32'] },
              { id: 'gone', url: gone.url, secretEnv: 'SB_EVENTS_SECRET', events: ['turn.completed'], allowCidrs: ['127.0.0.1/32'] },
            ],
          },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    for (const r of [callback, flaky, dead, gone]) r?.server.close();
  });

  const post = (name: string, body: unknown, opts: { ts?: number; secret?: string; headers?: Record<string, string> } = {}) => {
    const raw = JSON.stringify(body);
    const ts = opts.ts ?? Math.floor(Date.now() / 1000);
    return fetch(`${gw.url}/v1/webhooks/${name}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-switchboard-timestamp': String(ts),
        'x-switchboard-signature': sign(opts.secret ?? SECRET, ts, raw),
        ...opts.headers,
      },
      body: raw,
    });
  };

  it('answers a signed message at once and delivers the reply, signed, to the configured callback', async () => {
    const r = await post('crm', { text: 'new lead: ACME', conversation: 'lead-1' });
    expect(r.status).toBe(202);
    await eventually(async () => callback.got.length === 1);
    const got = callback.got[0]!;
    expect(got.body).toMatchObject({ text: 'hooked: new lead: ACME', finishReason: 'stop' });
    expect(verify(SECRET, got.headers, Buffer.from(JSON.stringify(got.body)), 300).ok).toBe(true);
  });

  it('refuses forged, expired and replayed signatures', async () => {
    expect((await post('crm', { text: 'x' }, { secret: 'wrong-secret-000000000' })).status).toBe(401);
    expect((await post('crm', { text: 'x' }, { ts: Math.floor(Date.now() / 1000) - 3600 })).status).toBe(401);
    expect((await fetch(`${gw.url}/v1/webhooks/crm`, { method: 'POST', body: '{"text":"x"}' })).status).toBe(401);
    // A captured request replayed later than the window is refused even with its valid signature.
    const raw = JSON.stringify({ text: 'captured' });
    const old = Math.floor(Date.now() / 1000) - 600;
    const replay = await fetch(`${gw.url}/v1/webhooks/crm`, {
      method: 'POST',
      headers: { 'x-switchboard-timestamp': String(old), 'x-switchboard-signature': sign(SECRET, old, raw) },
      body: raw,
    });
    expect(replay.status).toBe(401);
    expect((await post('nope', { text: 'x' })).status).toBe(404);
  });

  it('answers a retried delivery (same idempotency key) once', async () => {
    const before = fake.requests.length;
    const n = callback.got.length;
    for (let i = 0; i < 3; i++)
      expect((await post('crm', { text: 'only once please', conversation: 'idem' }, { headers: { 'idempotency-key': 'delivery-77' } })).status).toBe(202);
    await eventually(async () => callback.got.length === n + 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(fake.requests.length - before).toBe(1);
    expect(callback.got.length).toBe(n + 1);
  });

  it('refuses a callback to a private address (and a callback URL taken from the request)', async () => {
    expect((await post('crm', { text: 'x', callbackUrl: 'http://169.254.169.254/latest' })).status).toBe(400);
    expect((await post('internal', { text: 'call me back inside' })).status).toBe(202);
    const row = await eventually(
      async () =>
        (
          await gw.infra.store.db.query<{ state: string; body: string }>(
            `select state, body from deliveries where channel = 'webhook' and target like '%127.0.0.1:9%'`,
          )
        ).rows[0],
    );
    expect(row.state).toBe('failed');
    expect(row.body).toMatch(/private|loopback|refused/i);
    // A blocked address is a refusal: dead-lettered at once for the operator, never retried by the delivery queue.
    const dead = await eventually(
      async () =>
        (await gw.infra.store.db.query<{ code: string; attempts: number }>(`select code, attempts from delivery_dead_letters where channel = 'webhook'`))
          .rows[0],
    );
    expect(dead.attempts).toBe(1);
    expect(dead.code).toMatch(/^channel_delivery_refused:SSRF guard refused/);
  });

  it('delivers events to a subscriber that fails three times on the fourth try, and dead-letters a dead one', async () => {
    await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'an event please' }] });
    await eventually(async () => flaky.got.some((g) => g.body.data.text === 'hooked: an event please'), 20_000);
    const ev = flaky.got.find((g) => g.body.data.text === 'hooked: an event please')!;
    expect(ev.body.type).toBe('turn.completed');
    expect(ev.headers['x-switchboard-event']).toBe('turn.completed');
    expect(flakyCalls).toBeGreaterThanOrEqual(4);
    const letters = await eventually(async () => {
      const r = await fetch(`${gw.url}/v1/events/dead-letters`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } });
      const b = (await r.json()) as { data: Array<{ subscriber: string; attempts: number; error: string; event: { type: string } }> };
      return b.data.find((d) => d.subscriber === 'dead' && d.event.type === 'turn.completed');
    }, 20_000);
    expect(letters).toMatchObject({ attempts: 4, error: 'HTTP 503' });
    expect(dead.got).toHaveLength(0);
  });

  it('dead-letters an event a subscriber refuses with a 4xx after one try (a 5xx is retried)', async () => {
    const before = goneCalls;
    await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'refused event' }] });
    const letter = await eventually(async () => {
      const r = await fetch(`${gw.url}/v1/events/dead-letters`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } });
      const b = (await r.json()) as { data: Array<{ subscriber: string; attempts: number; error: string; event: { data: { text?: string } } }> };
      return b.data.find((d) => d.subscriber === 'gone' && d.event.data.text === 'hooked: refused event');
    }, 20_000);
    expect(letter).toMatchObject({ attempts: 1, error: 'HTTP 410' });
    await new Promise((r) => setTimeout(r, 500)); // longer than the 50 ms backoff of a retry
    expect(goneCalls - before).toBe(1);
  });

  it('operators add subscribers and read dead letters from the CLI', async () => {
    const cli = (...args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const p = spawn(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'webhooks', ...args], {
          env: { PATH: process.env.PATH ?? '', SWITCHBOARD_URL: gw.url!, SWITCHBOARD_OPERATOR_KEY: OPERATOR_KEY },
        });
        let stdout = '';
        let stderr = '';
        p.stdout.on('data', (d) => (stdout += d));
        p.stderr.on('data', (d) => (stderr += d));
        p.on('close', (status) => resolve({ status, stdout, stderr }));
      });
    const added = await cli(
      'add',
      'audit',
      'https://audit.example.com/hook',
      '--secret-env',
      'SB_EVENTS_SECRET',
      '--events',
      'approval.requested,approval.decided',
    );
    expect(added).toMatchObject({ status: 0, stdout: 'subscribed audit\n' });
    const list = JSON.parse((await cli('list', '--json')).stdout) as Array<{ id: string; events: string[] }>;
    expect(list).toEqual([expect.objectContaining({ id: 'audit', events: ['approval.requested', 'approval.decided'] })]);
    expect((await cli('add', 'bad', 'https://x.example.com', '--secret-env', 'S', '--events', 'turn.exploded')).status).toBe(1);
    expect((await cli('add', 'missing-args')).status).toBe(2);
    const letters = JSON.parse((await cli('dead-letters', '--json')).stdout) as Array<{ subscriber: string }>;
    expect(letters.some((l) => l.subscriber === 'dead')).toBe(true);
  });
});
