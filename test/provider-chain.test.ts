/**
 * The provider fallback chain against fake LLM servers (OpenAI and Anthropic
 * wire formats), with the real pi-ai SDK doing the HTTP.
 */

import type { AgentTool } from '@mariozechner/pi-agent-core';
import { type Api, type AssistantMessage, type Model, Type } from '@mariozechner/pi-ai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCooldowns } from '../adapters/cooldowns/memory.js';
import { RedisCooldowns } from '../adapters/cooldowns/redis.js';
import { type Attempt, FallbackChain, type FallbackSettings } from '../providers/chain.js';
import { classifyError, parseRetryAfter } from '../providers/errors.js';
import { runAgent } from '../src/agent-loop.js';
import { configSchema } from '../src/config.js';
import { FakeLlm, type FakeScript, reply, toolCall } from './fakes/fake-llm.js';
import { TestRedis } from './support/redis.js';

const settings = (patch: Partial<FallbackSettings> = {}): FallbackSettings => ({
  ...configSchema.parse({}).fallback,
  busyRetryMs: 0,
  timeouts: { connectMs: 2_000, firstTokenMs: 2_000, idleMs: 400, totalMs: 10_000 },
  ...patch,
});

function openaiModel(fake: FakeLlm, contextWindow = 8000): Model<Api> {
  return {
    id: 'fake-model',
    name: 'fake',
    api: 'openai-completions',
    provider: 'local',
    baseUrl: fake.openaiBaseUrl,
    reasoning: false,
    input: ['text'],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow,
    maxTokens: 1000,
    compat: { supportsDeveloperRole: false, supportsStore: false, maxTokensField: 'max_tokens' },
  } as Model<Api>;
}
function anthropicModel(fake: FakeLlm): Model<Api> {
  return { ...openaiModel(fake), api: 'anthropic-messages', provider: 'anthropic', baseUrl: fake.url } as Model<Api>;
}

const ctx = { systemPrompt: 'test', messages: [{ role: 'user' as const, content: 'hi', timestamp: Date.now() }] };

async function call(chain: FallbackChain, opts: { signal?: AbortSignal } = {}) {
  const attempts: Attempt[] = [];
  const resets: string[] = [];
  const notices: string[] = [];
  let text = '';
  const s = chain.stream(ctx, opts, {
    onAttempt: (a) => attempts.push(a),
    onReset: (r) => {
      resets.push(r);
      text = '';
    },
    onNotice: (n) => notices.push(n),
  });
  for await (const ev of s) if (ev.type === 'text_delta') text += ev.delta;
  const message = (await s.result()) as AssistantMessage;
  return { message, attempts, resets, notices, text };
}

describe('provider fallback chain', () => {
  let a: FakeLlm;
  let b: FakeLlm;
  beforeAll(async () => {
    a = new FakeLlm();
    b = new FakeLlm();
    await Promise.all([a.start(), b.start()]);
    b.respond(() => reply('answer from B'));
  });
  afterEach(() => {
    a.reset();
    b.reset();
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });
  const chainOf = (cooldowns = new MemoryCooldowns(), patch: Partial<FallbackSettings> = {}) =>
    new FallbackChain(
      [
        { id: 'A', model: openaiModel(a), apiKey: 'k' },
        { id: 'B', model: openaiModel(b), apiKey: 'k' },
      ],
      cooldowns,
      settings(patch),
    );

  const cases: Array<[string, string, boolean, FakeScript]> = [
    ['429 rate limit', 'rate_limit', true, [{ kind: 'error', status: 429 }]],
    ['529 overloaded', 'overloaded', true, [{ kind: 'error', status: 529 }]],
    ['503 unavailable', 'overloaded', true, [{ kind: 'error', status: 503 }]],
    ['500 server error', 'server', true, [{ kind: 'error', status: 500 }]],
    ['401 bad key', 'auth', true, [{ kind: 'error', status: 401 }]],
    ['connection dropped before any byte', 'network', true, [{ kind: 'disconnect', afterTokens: 0, text: '' }]],
    ['no first token (stall)', 'timeout', true, [{ kind: 'stall', afterTokens: 0, text: '' }]],
    ['400 bad request', 'bad_request', false, [{ kind: 'error', status: 400 }]],
  ];
  it.each(cases)('%s → %s, advances: %s', async (_name, cls, advances, script) => {
    a.enqueue(script);
    const cooldowns = new MemoryCooldowns();
    const r = await call(chainOf(cooldowns));
    expect(r.attempts[0]).toMatchObject({ slot: 'A', error: cls });
    if (advances) {
      expect(r.attempts[1]).toMatchObject({ slot: 'B', error: 'ok' });
      expect(r.text).toBe('answer from B');
      expect(r.message.stopReason).toBe('stop');
      const st = (await cooldowns.get(['A'])).get('A')!;
      expect(st.strikes).toBe(1);
      const expected = cls === 'auth' ? 3_600_000 : 30_000;
      expect(st.until - Date.now()).toBeGreaterThan(expected - 2_000);
      expect(st.until - Date.now()).toBeLessThanOrEqual(expected);
    } else {
      expect(r.attempts).toHaveLength(1);
      expect(b.requests).toHaveLength(0);
      expect(r.message.stopReason).toBe('error');
    }
  });

  it('sends a temperature above 1 as 1 to an Anthropic slot, as asked to an OpenAI one', async () => {
    a.enqueue([{ kind: 'error', status: 500 }]);
    b.respond(() => reply('answer from B'));
    const chain = new FallbackChain(
      [
        { id: 'A', model: openaiModel(a), apiKey: 'k' },
        { id: 'B', model: anthropicModel(b), apiKey: 'k' },
      ],
      new MemoryCooldowns(),
      settings(),
    );
    const s = chain.stream(ctx, { temperature: 1.5 }, {});
    expect(((await s.result()) as AssistantMessage).stopReason).toBe('stop');
    expect(a.requests[0]!.body.temperature).toBe(1.5);
    expect(b.requests[0]!.api).toBe('anthropic');
    expect(b.requests[0]!.body.temperature).toBe(1);
  });

  it('an aborted call does not advance', async () => {
    a.enqueue([{ kind: 'stall', afterTokens: 1, text: 'partial words here' }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 150);
    const r = await call(chainOf(new MemoryCooldowns(), { timeouts: { connectMs: 2_000, firstTokenMs: 2_000, idleMs: 5_000, totalMs: 10_000 } }), {
      signal: ac.signal,
    });
    expect(r.message.stopReason).toBe('aborted');
    expect(r.attempts).toEqual([expect.objectContaining({ slot: 'A', error: 'aborted' })]);
    expect(b.requests).toHaveLength(0);
  });

  it('honours Retry-After for the cooldown', async () => {
    a.enqueue([{ kind: 'error', status: 429, retryAfter: 7 }]);
    const cooldowns = new MemoryCooldowns();
    await call(chainOf(cooldowns));
    const left = (await cooldowns.get(['A'])).get('A')!.until - Date.now();
    expect(left).toBeGreaterThan(5_500);
    expect(left).toBeLessThanOrEqual(7_000);
    expect(parseRetryAfter('2')).toBe(2_000);
    expect(parseRetryAfter(new Date(Date.now() + 60_000).toUTCString())).toBeGreaterThan(58_000);
  });

  it('escalates cooldowns 30 s → 1 min → 5 min, tries cooling slots last (not never), and a success resets', async () => {
    const cooldowns = new MemoryCooldowns();
    const chain = chainOf(cooldowns);
    const untilFor = async () => (await cooldowns.get(['A'])).get('A')!.until - Date.now();
    a.enqueue([{ kind: 'error', status: 500 }]);
    await call(chain);
    expect(await untilFor()).toBeGreaterThan(28_000);
    // A is cooling: B goes first and A is not asked.
    const second = await call(chain);
    expect(second.attempts.map((x) => x.slot)).toEqual(['B']);
    expect(a.requests).toHaveLength(1);
    // B failing too: the cooling A is still tried, last.
    b.enqueue([{ kind: 'error', status: 500 }]);
    a.enqueue([{ kind: 'error', status: 500 }]);
    const third = await call(chain);
    expect(third.attempts.map((x) => `${x.slot}:${x.error}`)).toEqual(['B:server', 'A:server']);
    expect(await untilFor()).toBeGreaterThan(58_000);
    a.enqueue([{ kind: 'error', status: 500 }]);
    b.enqueue([{ kind: 'error', status: 500 }]);
    await call(chain);
    expect(await untilFor()).toBeGreaterThan(298_000); // capped at the last step
    a.enqueue([{ kind: 'error', status: 500 }]);
    b.enqueue([{ kind: 'error', status: 500 }]);
    await call(chain);
    expect(await untilFor()).toBeLessThanOrEqual(300_000);
    // Make B cool longer than A, so A comes first, and succeed on A: its strikes reset.
    await cooldowns.fail('B', () => 900_000, 'server');
    a.respond(() => reply('A is back'));
    const back = await call(chain);
    expect(back.text).toBe('A is back');
    expect((await cooldowns.get(['A'])).get('A')!).toMatchObject({ until: 0, strikes: 0 });
    a.respond(() => reply('ok'));
  });

  it('withdraws a partial answer when the provider dies mid-stream, and the next slot answers from the same context', async () => {
    a.enqueue([{ kind: 'disconnect', afterTokens: 10, text: Array.from({ length: 30 }, (_, i) => `a${i}`).join(' ') }]);
    const r = await call(chainOf());
    expect(r.resets).toHaveLength(1);
    expect(r.text).toBe('answer from B');
    expect(r.message.content).toEqual([expect.objectContaining({ type: 'text', text: 'answer from B' })]);
    expect(JSON.stringify(b.requests[0]!.body.messages)).toBe(JSON.stringify(a.requests[0]!.body.messages));
    expect(r.attempts.map((x) => `${x.slot}:${x.error}`)).toEqual(['A:network', 'B:ok']);
  });

  it('times out a stream that goes quiet between chunks (idle gap)', async () => {
    a.enqueue([{ kind: 'stall', afterTokens: 3, text: 'one two three four five' }]);
    const t0 = Date.now();
    const r = await call(chainOf());
    expect(r.attempts[0]).toMatchObject({ slot: 'A', error: 'timeout' });
    expect(r.text).toBe('answer from B');
    expect(Date.now() - t0).toBeLessThan(3_000);
  });

  it('with every slot down, retries with backoff until the deadline, tells the user once, then fails clearly', async () => {
    a.respond(() => [{ kind: 'error', status: 500 }]);
    b.respond(() => [{ kind: 'error', status: 502 }]);
    const t0 = Date.now();
    const r = await call(chainOf(new MemoryCooldowns(), { busyRetryMs: 1_500, busyNoticeMs: 400 }));
    const took = Date.now() - t0;
    expect(r.message.stopReason).toBe('error');
    expect(r.message.errorMessage).toMatch(/All model providers failed \(A: server, B: server\)/);
    expect(r.notices).toHaveLength(1);
    expect(r.attempts.length).toBeGreaterThanOrEqual(4); // more than one round
    expect(took).toBeGreaterThanOrEqual(1_400);
    expect(took).toBeLessThan(5_000);
    a.respond(() => reply('ok'));
    b.respond(() => reply('answer from B'));
  });

  it('speaks the Anthropic wire format, and fails over from Anthropic to OpenAI', async () => {
    const chain = new FallbackChain(
      [
        { id: 'claude', model: anthropicModel(a), apiKey: 'k' },
        { id: 'gpt', model: openaiModel(b), apiKey: 'k' },
      ],
      new MemoryCooldowns(),
      settings(),
    );
    a.enqueue(reply('hello from claude'));
    expect((await call(chain)).text).toBe('hello from claude');
    expect(a.requests[0]!.api).toBe('anthropic');
    a.enqueue([{ kind: 'error', status: 529 }]);
    const r = await call(new FallbackChain(chain.slots, new MemoryCooldowns(), settings()));
    expect(r.attempts.map((x) => `${x.slot}:${x.error}`)).toEqual(['claude:overloaded', 'gpt:ok']);
    expect(r.text).toBe('answer from B');
  });

  it('hands a context overflow to compaction, then to a slot with a larger window', async () => {
    const big = new FakeLlm();
    await big.start();
    big.respond(() => reply('the big model answers'));
    const overflow: FakeScript = [
      {
        kind: 'error',
        status: 400,
        body: {
          error: {
            message: "This model's maximum context length is 8000 tokens, your messages exceed the context window",
            type: 'invalid_request_error',
            code: 'context_length_exceeded',
          },
        },
      },
    ];
    const chain = new FallbackChain(
      [
        { id: 'small', model: openaiModel(a, 8000), apiKey: 'k' },
        { id: 'small2', model: openaiModel(b, 8000), apiKey: 'k' },
        { id: 'big', model: openaiModel(big, 200_000), apiKey: 'k' },
      ],
      new MemoryCooldowns(),
      settings(),
    );
    a.enqueue(overflow, overflow);
    let compactions = 0;
    const s = chain.stream(ctx, {}, { onContextOverflow: async (c) => (compactions++, { ...c, messages: c.messages.slice(-1) }) });
    let text = '';
    for await (const ev of s) if (ev.type === 'text_delta') text += ev.delta;
    expect(compactions).toBe(1); // one compact-and-retry on the same slot
    expect(a.requests).toHaveLength(2);
    expect(b.requests).toHaveLength(0); // same window: skipped
    expect(text).toBe('the big model answers');
    expect(classifyError({ stopReason: 'error', errorMessage: "400 This model's maximum context length is 8000 tokens", usage: undefined as never })).toBe(
      'context_overflow',
    );
    await big.close();
  });

  it('never runs a tool call twice because a provider failed mid-answer', async () => {
    let runs = 0;
    const tool: AgentTool = {
      name: 'send_email',
      label: 'send',
      description: 'send an email',
      parameters: Type.Object({ to: Type.String() }),
      execute: async () => {
        runs++;
        return { content: [{ type: 'text', text: 'sent' }], details: {} };
      },
    };
    // A streams the tool call and dies before finishing the message; B produces it whole.
    a.enqueue([
      { kind: 'toolCall', name: 'send_email', args: { to: 'x@example.com' } },
      { kind: 'disconnect', afterTokens: 0, text: '' },
    ]);
    b.enqueue(toolCall('send_email', { to: 'x@example.com' }), reply('done, sent once'));
    let resets = 0;
    const r = await runAgent(
      {
        systemPrompt: 's',
        history: [],
        prompts: [{ role: 'user', content: 'mail x', timestamp: Date.now() }],
        tools: [tool],
        chain: chainOf(),
        maxIterations: 5,
      },
      { onText: () => {}, onReset: () => resets++ },
    );
    expect(runs).toBe(1);
    expect(r.text).toContain('done, sent once');
    expect(r.newMessages.filter((m) => m.role === 'toolResult')).toHaveLength(1);
  });
});

describe('cooldowns shared through Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis?.stop());

  it('a slot cooled by one connection is cooling for another', async () => {
    const one = new RedisCooldowns(redis.url, 'cd');
    const two = new RedisCooldowns(redis.url, 'cd');
    await one.fail('A', (strikes) => strikes * 10_000, 'rate_limit');
    const seen = (await two.get(['A', 'B'])).get('A')!;
    expect(seen).toMatchObject({ strikes: 1, reason: 'rate_limit' });
    expect(seen.until).toBeGreaterThan(Date.now() + 9_000);
    expect((await two.fail('A', (s) => s * 10_000, 'server')).strikes).toBe(2);
    await two.clear('A');
    expect((await one.get(['A'])).get('A')).toMatchObject({ until: 0, strikes: 0 });
    await one.close();
    await two.close();
  });
});
