/**
 * Webhook replay, as an attacker who captured one signed request would try it:
 * the same body and signature again with a new (unsigned) Idempotency-Key, with
 * no key at all, and after the window. Each is one message at most.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { sign } from '../kernel/hmac-signature.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { startGateway, testConfig } from './support/gateway.js';

const SECRET = 'webhook-replay-secret-0123456789';

describe('webhook replay protection', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    process.env.SB_REPLAY_SECRET = SECRET;
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`got: ${lastUserText(req.body)}`));
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          channels: {
            webhook: { hooks: [{ name: 'crm', secretEnv: 'SB_REPLAY_SECRET', callbackUrl: 'http://127.0.0.1:9/nowhere' }], replayWindowSeconds: 60 },
          },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    delete process.env.SB_REPLAY_SECRET;
  });

  /** One captured request: body, timestamp and signature fixed; headers may be varied by the attacker. */
  const capture = (body: unknown, ts = Math.floor(Date.now() / 1000)) => {
    const raw = JSON.stringify(body);
    const sig = sign(SECRET, ts, raw);
    return (extra: Record<string, string> = {}) =>
      fetch(`${gw.url}/v1/webhooks/crm`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-switchboard-timestamp': String(ts), 'x-switchboard-signature': sig, ...extra },
        body: raw,
      });
  };
  const inboxCount = async (text: string) =>
    (await gw.infra.store.db.query<{ n: number }>(`select count(*)::int as n from inbox where channel = 'webhook' and text = $1`, [text])).rows[0]!.n;

  it('accepts a signed request once, whatever new Idempotency-Key header the replay carries', async () => {
    const send = capture({ text: 'transfer the lead, replay 1' });
    const first = await send({ 'idempotency-key': 'orig-1' });
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ accepted: true, duplicate: false });
    for (const k of ['attacker-1', 'attacker-2', 'attacker-3']) {
      const again = await send({ 'idempotency-key': k });
      expect(again.status).toBe(202);
      expect(await again.json()).toMatchObject({ duplicate: true });
    }
    expect(await inboxCount('transfer the lead, replay 1')).toBe(1);
  });

  it('accepts a signed request with no key at all once', async () => {
    const send = capture({ text: 'no key, replay 2' });
    expect(await (await send()).json()).toMatchObject({ duplicate: false });
    expect(await (await send()).json()).toMatchObject({ duplicate: true });
    expect(await (await send()).json()).toMatchObject({ duplicate: true });
    expect(await inboxCount('no key, replay 2')).toBe(1);
  });

  it("lets the signed body's key win over the header", async () => {
    // Two different signatures (a sender's retry) carrying the same body key but new header keys: one message.
    const body = { text: 'body key wins', idempotencyKey: 'body-key-9' };
    expect((await capture(body)({ 'idempotency-key': 'h-1' })).status).toBe(202);
    const retry = await capture(body, Math.floor(Date.now() / 1000) - 1)({ 'idempotency-key': 'h-2' });
    expect(await retry.json()).toMatchObject({ duplicate: true });
    expect(await inboxCount('body key wins')).toBe(1);
  });

  it('refuses a captured request after the window', async () => {
    const old = capture({ text: 'too late' }, Math.floor(Date.now() / 1000) - 120);
    const r = await old();
    expect(r.status).toBe(401);
    expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/replay window/);
    expect(await inboxCount('too late')).toBe(0);
  });
});
