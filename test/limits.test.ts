/** Rate limits, per-turn budgets and the global cap on concurrent turns. */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../src/gateway.js';
import { Ingress } from '../src/ingress.js';
import { RateLimits } from '../src/limits.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { openaiClient, startGateway, testConfig } from './support/gateway.js';

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
      testConfig(fake, {}, {
        limits: { applyToHttp: true, sender: { burst: 5, perMinute: 6 }, conversation: { burst: 100, perMinute: 600 }, turnTokens: 400, globalConcurrentTurns: 1 },
        tools: { planner: false },
      }),
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
    const msg = (i: number) => ({ channel: 'test', externalId: `rl-${i}`, conversationKey: 'test/-/rl/-', sender: { id: 'chatty' }, text: `hi ${i}`, attachments: [], receivedAt: new Date() });
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
    expect(turn!.finish_reason).toBe('budget');
  });

  it('runs at most the global number of turns at once', async () => {
    await Promise.all(['g1', 'g2', 'g3'].map((c) => openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': c }).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `go ${c}` }] })));
    const turns = (await gw.infra.store.db.query<{ started_at: Date; finished_at: Date }>(`select t.started_at, t.finished_at from turns t join conversations c on c.id = t.conversation_id where c.key ~ '/g[123]/' order by t.started_at`)).rows;
    expect(turns).toHaveLength(3);
    for (let i = 1; i < turns.length; i++) expect(turns[i]!.started_at.getTime()).toBeGreaterThanOrEqual(turns[i - 1]!.finished_at.getTime());
  });
});
