/** Rate limits (per sender, conversation and API key), per-turn budgets, the caps on concurrent turns and the slot counters behind them. */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../adapters/db/pglite.js';
import { MemoryRateLimiter } from '../adapters/ratelimit/memory.js';
import type { TurnSlots } from '../adapters/ratelimit/port.js';
import { RedisRateLimiter } from '../adapters/ratelimit/redis.js';
import { migrate } from '../adapters/store/migrate.js';
import { Store } from '../adapters/store/store.js';
import type { Gateway } from '../app/gateway.js';
import { configSchema, loadConfig } from '../src/config.js';
import { Ingress } from '../src/ingress.js';
import { RateLimits, turnScopes } from '../src/limits.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { API_KEY, OTHER_KEY, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { TestRedis } from './support/redis.js';

describe('limits', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const t = lastUserText(req.body);
      if (t === 'loop forever') return toolCall('current_time', {});
      return reply(`ok ${t}`, 10);
    });
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          limits: {
            applyToHttp: true,
            sender: { burst: 5, perMinute: 6 },
            conversation: { burst: 100, perMinute: 600 },
            turnTokens: 400,
            globalConcurrentTurns: 1,
          },
          tools: { planner: false },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('limits a sender on the HTTP API with a 429 and Retry-After', async () => {
    const c = openaiClient(gw.url!, 'sk-test-key-0002');
    for (let i = 0; i < 5; i++) await c.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `m${i}` }] });
    const err = await c.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'one too many' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(Number((err as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((err as Error).message).toMatch(/faster than I can answer/);
  });

  it('limits a sender in a chat channel with a friendly reply', async () => {
    const ingress = new Ingress(gw.infra.store, gw.infra.queue, gw.log, { limits: new RateLimits(gw.infra.rateLimiter, gw.config) });
    const msg = (i: number) => ({
      channel: 'test',
      externalId: `rl-${i}`,
      conversationKey: 'test/-/rl/-',
      sender: { id: 'chatty' },
      text: `hi ${i}`,
      attachments: [],
      receivedAt: new Date(),
    });
    const outcomes = [];
    for (let i = 0; i < 6; i++) outcomes.push(await ingress.receive(msg(i)));
    expect(outcomes.slice(0, 5).every((o) => o.kind === 'accepted')).toBe(true);
    expect(outcomes[5]).toMatchObject({ kind: 'refused', reply: expect.stringMatching(/please wait \d+ s/) });
  });

  it('stops a turn at its token budget, before the next model call', async () => {
    const before = fake.requests.length;
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'loop forever' }] });
    expect(r.choices[0]!.message.content).toMatch(/Stopped: this turn reached its budget of 400 tokens/);
    const calls = fake.requests.length - before;
    expect(calls).toBeGreaterThan(1);
    expect(calls).toBeLessThan(20);
    const turn = await gw.infra.store.turn((r as any).switchboard.turn);
    expect(turn!.finishReason).toBe('budget');
  });

  it('runs at most the global number of turns at once', async () => {
    await Promise.all(
      ['g1', 'g2', 'g3'].map((c) =>
        openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': c }).chat.completions.create({
          model: 'default',
          messages: [{ role: 'user', content: `go ${c}` }],
        }),
      ),
    );
    const turns = (
      await gw.infra.store.db.query<{ started_at: Date; finished_at: Date }>(
        `select t.started_at, t.finished_at from turns t join conversations c on c.id = t.conversation_id where c.key ~ '/g[123]/' order by t.started_at`,
      )
    ).rows;
    expect(turns).toHaveLength(3);
    for (let i = 1; i < turns.length; i++) expect(turns[i]!.started_at.getTime()).toBeGreaterThanOrEqual(turns[i - 1]!.finished_at.getTime());
  });
});

describe('HTTP rate limit per API key (limits.apiKey)', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let off: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`ok ${lastUserText(req.body)}`));
    gw = await startGateway(testConfig(fake, {})); // the defaults: 60 a minute, bursts of 60
    off = await startGateway(testConfig(fake, {}, { limits: { apiKey: 'off' } }));
  });
  afterAll(async () => {
    await gw?.close();
    await off?.close();
    await fake?.close();
  });

  /** A request the gateway answers without a turn (unknown model: 404), so that many of them are quick. */
  const cheap = (url: string, key = API_KEY) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'no-such-agent', messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('is on by default, and `off`, 0 or SWITCHBOARD_HTTP_RATE_LIMIT=off turn it off', () => {
    expect(configSchema.parse({}).limits.apiKey).toEqual({ perMinute: 60, burst: 60 });
    expect(configSchema.parse({ limits: { apiKey: 'off' } }).limits.apiKey).toEqual({ perMinute: 0, burst: 0 });
    expect(configSchema.parse({ limits: { apiKey: 0 } }).limits.apiKey).toEqual({ perMinute: 0, burst: 0 });
    expect(configSchema.parse({ limits: { apiKey: { perMinute: 120, burst: 10 } } }).limits.apiKey).toEqual({ perMinute: 120, burst: 10 });
    expect(loadConfig({ SWITCHBOARD_HTTP_RATE_LIMIT: 'off' }).limits.apiKey).toEqual({ perMinute: 0, burst: 0 });
    expect(loadConfig({ SWITCHBOARD_HTTP_RATE_LIMIT: '600' }).limits.apiKey).toEqual({ perMinute: 600, burst: 600 });
    expect(() => loadConfig({ SWITCHBOARD_HTTP_RATE_LIMIT: 'fast' })).toThrow(/SWITCHBOARD_HTTP_RATE_LIMIT.*expected off, a number of requests per minute/);
  });

  it('answers the request past the burst with 429, Retry-After and an OpenAI error; other keys are not affected', async () => {
    // The bucket refills one a second while we send, so on a slow machine a few more than 60 pass.
    const t0 = Date.now();
    let passed = 0;
    let r = await cheap(gw.url!);
    while (r.status === 404 && passed < 200) {
      passed++;
      r = await cheap(gw.url!);
    }
    expect(r.status).toBe(429);
    expect(passed).toBeGreaterThanOrEqual(60);
    expect(passed).toBeLessThanOrEqual(60 + Math.ceil((Date.now() - t0) / 1000) + 1);
    const retryAfter = Number(r.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 2).toBe(true);
    expect(await r.json()).toEqual({
      error: {
        message: expect.stringMatching(/^Rate limit reached for this API key: 60 requests per minute/),
        type: 'rate_limit_error',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
    // What an OpenAI client sees, and nothing was accepted for it.
    const err = await openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': 'limited' })
      .chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'refused one' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((await gw.infra.store.db.query(`select 1 from inbox where text = 'refused one'`)).rows).toHaveLength(0);
    // Another key has its own bucket.
    const other = await openaiClient(gw.url!, OTHER_KEY).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'other key' }] });
    expect(other.choices[0]!.message.content).toBe('ok other key');
    // After Retry-After, the key may send again.
    await new Promise((res) => setTimeout(res, retryAfter * 1000));
    const again = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'later' }] });
    expect(again.choices[0]!.message.content).toBe('ok later');
  });

  it('turned off, lets a key send as fast as it likes', async () => {
    const statuses = await Promise.all(Array.from({ length: 90 }, () => cheap(off.url!).then((r) => r.status)));
    expect(statuses.every((s) => s === 404)).toBe(true);
  });
});

describe('caps on concurrent turns: which turns count against what', () => {
  const cfg = configSchema.parse({});
  it('defaults to 8 turns per API key and 4 per chat sender; 0 turns a cap off', () => {
    expect(cfg.limits).toMatchObject({ maxConcurrentTurnsPerKey: 8, maxConcurrentTurnsPerSender: 4 });
    expect(loadConfig({ SWITCHBOARD_MAX_TURNS_PER_KEY: '0', SWITCHBOARD_MAX_TURNS_PER_SENDER: '2' }).limits).toMatchObject({
      maxConcurrentTurnsPerKey: 0,
      maxConcurrentTurnsPerSender: 2,
    });
  });
  it('counts an HTTP turn against its key (the hash id, never the key), a chat turn against its sender', () => {
    expect(turnScopes(cfg, { channel: 'http', owner: 'a1b2c3d4e5f60718' }, { channel: 'http', id: 'a1b2c3d4e5f60718' })).toEqual([
      { key: 'key:a1b2c3d4e5f60718', cap: 8 },
    ]);
    expect(turnScopes(cfg, { channel: 'slack', owner: null }, { channel: 'slack', workspace: 'T1', id: 'U123' })).toEqual([
      { key: 'sender:slack:T1:U123', cap: 4 },
    ]);
    // The sender is a whole identity: the same id on another channel counts on its own.
    expect(turnScopes(cfg, { channel: 'sms', owner: null }, { channel: 'sms', id: 'U123' })).toEqual([{ key: 'sender:sms:U123', cap: 4 }]);
    // An MCP operator's message in an HTTP conversation counts against the key and the operator.
    expect(turnScopes(cfg, { channel: 'http', owner: 'a1b2' }, { channel: 'mcp', id: 'a1b2' })).toEqual([
      { key: 'key:a1b2', cap: 8 },
      { key: 'sender:mcp:a1b2', cap: 4 },
    ]);
    const off = configSchema.parse({ limits: { maxConcurrentTurnsPerKey: 0, maxConcurrentTurnsPerSender: 0 } });
    expect(turnScopes(off, { channel: 'http', owner: 'a1b2' }, { channel: 'http', id: 'a1b2' })).toEqual([]);
    expect(turnScopes(off, { channel: 'sms', owner: null }, { channel: 'sms', id: '+15550001' })).toEqual([]);
  });
});

describe.each(['memory', 'redis'] as const)('turn slots (%s)', (kind) => {
  let redis: TestRedis | undefined;
  let slots: TurnSlots & { close(): Promise<void> };
  beforeAll(async () => {
    if (kind === 'redis') redis = await TestRedis.start();
    slots = kind === 'redis' ? new RedisRateLimiter(redis!.url, `slt${Math.random().toString(36).slice(2, 6)}`) : new MemoryRateLimiter();
  });
  afterAll(async () => {
    await slots?.close();
    await redis?.stop();
  });
  const scope = (key: string, cap: number) => [{ key, cap }];

  it('admits up to the cap, refuses beyond it, and wakes the oldest waiters as slots free', async () => {
    const k = scope('key:a', 2);
    expect(await slots.acquire(k, 'h1', 5_000, 'c1')).toEqual({ acquired: true });
    expect(await slots.acquire(k, 'h2', 5_000, 'c2')).toEqual({ acquired: true });
    expect(await slots.acquire(k, 'h1', 5_000, 'c1')).toEqual({ acquired: true }); // a holder keeps its slot
    expect(await slots.acquire(k, 'h3', 5_000, 'c3')).toEqual({ acquired: false, full: 'key:a' });
    expect(await slots.acquire(k, 'h4', 5_000, 'c4')).toEqual({ acquired: false, full: 'key:a' });
    expect(await slots.holders('key:a')).toBe(2);
    expect(await slots.release(k, 'h1')).toEqual(['c3']);
    expect(await slots.acquire(k, 'h3', 5_000, 'c3')).toEqual({ acquired: true });
    expect(await slots.release(k, 'h2')).toEqual(['c4']);
    expect(await slots.release(k, 'h3')).toEqual([]);
    expect(await slots.holders('key:a')).toBe(0);
  });

  it('takes every scope or none', async () => {
    expect(await slots.acquire(scope('sender:x', 1), 'h1', 5_000)).toEqual({ acquired: true });
    const both = [
      { key: 'key:b', cap: 5 },
      { key: 'sender:x', cap: 1 },
    ];
    expect(await slots.acquire(both, 'h2', 5_000, 'c2')).toEqual({ acquired: false, full: 'sender:x' });
    expect(await slots.holders('key:b')).toBe(0);
    expect(await slots.release(scope('sender:x', 1), 'h1')).toEqual(['c2']);
    expect(await slots.acquire(both, 'h2', 5_000, 'c2')).toEqual({ acquired: true });
    expect(await slots.holders('key:b')).toBe(1);
    await slots.release(both, 'h2');
  });

  it("frees a holder's slot when it stops renewing (a dead worker), and keeps it while it renews", async () => {
    const k = scope('key:c', 1);
    expect(await slots.acquire(k, 'alive', 300)).toEqual({ acquired: true });
    await new Promise((r) => setTimeout(r, 200));
    await slots.renew(k, 'alive', 300);
    await new Promise((r) => setTimeout(r, 200));
    expect(await slots.acquire(k, 'other', 300, 'c')).toEqual({ acquired: false, full: 'key:c' });
    await new Promise((r) => setTimeout(r, 250));
    expect(await slots.holders('key:c')).toBe(0);
    expect(await slots.acquire(k, 'other', 300, 'c')).toEqual({ acquired: true });
    await slots.release(k, 'other');
  });
});

describe('Store.deferTurn: a turn refused by a cap is put back as it was', () => {
  it('unclaims an opened turn, gives a resumed one its attempt back, frees the lease; the message is answered once later', async () => {
    const db = await openPglite();
    await migrate(db);
    const store = new Store(db);
    const { conversationId } = await store.accept({
      channel: 'test',
      externalId: 'defer-1',
      conversationKey: 'test/-/defer/-',
      sender: { id: 'u' },
      text: 'hello',
      attachments: [],
      receivedAt: new Date(),
    });
    const start = (lease: string) =>
      store.startTurn({
        conversationId,
        worker: 'w',
        lease,
        leaseMs: 30_000,
        claim: 'auto',
        modes: { default: 'followup', byChannel: {} },
        historyLimits: { default: 200 },
        memoryLimit: 20,
      });
    try {
      // Opened, refused: no turn row, the row unclaimed and unconsumed, the lease free for the next drain.
      const first = await start('L1');
      expect(first.turn).toMatchObject({ attempt: 1, seq: 1 });
      await store.deferTurn(first.turn!.id, conversationId, 'L1');
      expect(await store.turns(conversationId)).toEqual([]);
      expect(await store.pending(conversationId)).toMatchObject([{ text: 'hello', turnId: null, consumedAt: null }]);
      const opened = await start('L2');
      expect(opened.conversation).not.toBeNull();
      expect(opened.turn).toMatchObject({ attempt: 1, seq: 1 });
      // Its worker dies; the drain that resumes the turn after the lease expired is refused too.
      await db.query(`update conversations set lease_until = now() - interval '1 second' where id = $1`, [conversationId]);
      const resumed = await start('L3');
      expect(resumed.turn).toMatchObject({ id: opened.turn!.id, attempt: 2 });
      await store.deferTurn(resumed.turn!.id, conversationId, 'L3');
      expect(await store.turns(conversationId)).toMatchObject([{ id: opened.turn!.id, status: 'running', attempt: 1 }]);
      expect(await store.pending(conversationId)).toMatchObject([{ turnId: opened.turn!.id, consumedAt: null }]);
      // The next drain resumes it and finishes it, once.
      const last = await start('L4');
      expect(last.turn).toMatchObject({ id: opened.turn!.id, attempt: 2 });
      const done = await store.finishTurn({
        turnId: last.turn!.id,
        status: 'done',
        messages: [
          { role: 'user', content: 'hello' },
          { role: 'assistant', content: [{ type: 'text', text: 'hi' }] },
        ] as never,
        finishReason: 'stop',
        lease: 'L4',
      });
      expect(done).toEqual({ finished: true, pending: [] });
      expect(await store.pending(conversationId)).toEqual([]);
      expect(await store.turns(conversationId)).toMatchObject([{ status: 'done', attempt: 2 }]);
      expect((await start('L5')).conversation).toBeNull(); // nothing waits
    } finally {
      await db.close();
    }
  });
});
