import { type AssistantMessage, type Model, stream } from '@mariozechner/pi-ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeLlm, type FakeScript, lastUserText, reply, toolCall } from './fakes/fake-llm.js';

const fake = new FakeLlm({ apiKey: 'k' });
beforeAll(() => fake.start());
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const base = {
  id: 'fake-model',
  name: 'fake',
  provider: 'local',
  reasoning: false,
  input: ['text'],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 8000,
  maxTokens: 1000,
};
const openaiModel = (): Model<'openai-completions'> =>
  ({
    ...base,
    api: 'openai-completions',
    baseUrl: fake.openaiBaseUrl,
    compat: { supportsDeveloperRole: false, maxTokensField: 'max_tokens', supportsStore: false },
  }) as any;
const anthropicModel = (): Model<'anthropic-messages'> => ({ ...base, api: 'anthropic-messages', baseUrl: fake.url }) as any;
const client = (): OpenAI => new OpenAI({ apiKey: 'k', baseURL: fake.openaiBaseUrl, maxRetries: 0 });

async function run(model: Model<any>, opts: { signal?: AbortSignal; apiKey?: string } = {}, onDelta?: () => void) {
  const s = stream(model, { systemPrompt: 's', messages: [{ role: 'user', content: 'hi', timestamp: Date.now() }] }, {
    apiKey: 'k',
    maxRetries: 0,
    ...opts,
  } as any);
  const deltas: string[] = [];
  const toolCalls: any[] = [];
  const types: string[] = [];
  for await (const ev of s) {
    types.push(ev.type);
    if (ev.type === 'text_delta') {
      deltas.push(ev.delta);
      onDelta?.();
    }
    if (ev.type === 'toolcall_end') toolCalls.push(ev.toolCall);
  }
  const msg: AssistantMessage = await s.result();
  return { deltas, toolCalls, types, msg };
}

describe('FakeLlm with the openai client', () => {
  it('streams text and reports usage', async () => {
    fake.enqueue(reply('Hello there, world!'));
    const s = await client().chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const parts: string[] = [];
    let usage: any;
    let finish: string | null | undefined;
    for await (const c of s) {
      if (c.usage) usage = c.usage;
      const ch = c.choices[0];
      if (ch?.delta.content) parts.push(ch.delta.content);
      if (ch?.finish_reason) finish = ch.finish_reason;
    }
    expect(parts).toEqual(['Hello ', 'there, ', 'world!']);
    expect(finish).toBe('stop');
    expect(usage.completion_tokens).toBe(3);
    expect(fake.requests[0]).toMatchObject({ api: 'openai', index: 0, body: { model: 'fake-model', stream: true } });
    expect(lastUserText(fake.requests[0]!.body)).toBe('hi');
  });

  it('non-streaming text and tool calls; models list', async () => {
    fake.enqueue([
      { kind: 'text', text: 'Let me look.' },
      { kind: 'toolCall', name: 'lookup', args: { q: 'x' }, id: 'call_1' },
    ]);
    const r = await client().chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.choices[0]!.message.content).toBe('Let me look.');
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    expect(r.choices[0]!.message.tool_calls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }]);
    const models = await client().models.list();
    expect(models.data.map((m) => m.id)).toEqual(['fake-model']);
  });

  it('429 → RateLimitError with retry-after; wrong key → 401', async () => {
    fake.enqueue([{ kind: 'error', status: 429, retryAfter: 7 }]);
    const err: any = await client()
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.message).toBe('429 Rate limit reached');
    expect(err.headers.get('retry-after')).toBe('7');
    const bad = new OpenAI({ apiKey: 'wrong', baseURL: fake.openaiBaseUrl, maxRetries: 0 });
    const e2: any = await bad.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    expect(e2).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('malformed JSON → 400', async () => {
    const r = await fetch(`${fake.openaiBaseUrl}/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{nope' });
    expect(r.status).toBe(400);
    expect(((await r.json()) as any).error.type).toBe('invalid_request_error');
  });
});

for (const [label, model] of [
  ['openai-completions', openaiModel],
  ['anthropic-messages', anthropicModel],
] as const) {
  describe(`FakeLlm with pi-ai ${label}`, () => {
    it('streams text', async () => {
      fake.enqueue(reply('one two  three\nfour', 1));
      const { deltas, msg } = await run(model());
      expect(deltas).toEqual(['one ', 'two  ', 'three\n', 'four']);
      expect(msg.stopReason).toBe('stop');
      expect(msg.content).toEqual([{ type: 'text', text: 'one two  three\nfour' }]);
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0]!.api).toBe(label === 'openai-completions' ? 'openai' : 'anthropic');
      expect(lastUserText(fake.requests[0]!.body)).toBe('hi');
    });

    it('text then tool call with parsed arguments', async () => {
      const args = { city: 'Paris', days: [1, 2], nested: { ok: true } };
      fake.enqueue([{ kind: 'text', text: 'Checking.' }, ...toolCall('weather', args, 'tc_1')]);
      const { toolCalls, msg } = await run(model());
      expect(toolCalls).toEqual([{ type: 'toolCall', id: 'tc_1', name: 'weather', arguments: args }]);
      expect(msg.stopReason).toBe('toolUse');
      expect(msg.content[0]).toEqual({ type: 'text', text: 'Checking.' });
    });

    it('429 → stopReason error, message starts with 429', async () => {
      fake.enqueue([{ kind: 'error', status: 429 }]);
      const { msg } = await run(model());
      expect(msg.stopReason).toBe('error');
      expect(msg.errorMessage).toMatch(/^429/);
    });

    it('disconnect mid-stream → error with partial text', async () => {
      fake.enqueue([{ kind: 'disconnect', afterTokens: 2, text: 'a b c d e' }]);
      const { deltas, msg } = await run(model());
      expect(deltas).toEqual(['a ', 'b ']);
      expect(msg.stopReason).toBe('error');
      expect(msg.content).toEqual([{ type: 'text', text: 'a b ' }]);
    });

    it('stall can be aborted', async () => {
      fake.enqueue([{ kind: 'stall', afterTokens: 1, text: 'x y z' }]);
      const ac = new AbortController();
      const { deltas, msg } = await run(model(), { signal: ac.signal }, () => setTimeout(() => ac.abort(), 20));
      expect(deltas).toEqual(['x ']);
      expect(msg.stopReason).toBe('aborted');
    });

    it('wrong api key → 401', async () => {
      const { msg } = await run(model(), { apiKey: 'nope' });
      expect(msg.stopReason).toBe('error');
      expect(msg.errorMessage).toMatch(/^401/);
    });
  });
}

describe('FakeLlm scripting', () => {
  it('fallback responder sees the request; delay, close with a stalled socket', async () => {
    const f = new FakeLlm();
    await f.start();
    f.respond((req): FakeScript => [{ kind: 'delay', ms: 20 }, ...reply(`echo: ${lastUserText(req.body)} #${req.index}`)]);
    const { msg } = await run({ ...openaiModel(), baseUrl: f.openaiBaseUrl });
    expect(msg.content).toEqual([{ type: 'text', text: 'echo: hi #0' }]);
    f.enqueue([{ kind: 'stall' }]);
    const pending = run({ ...anthropicModel(), baseUrl: f.url });
    while (f.requests.length < 2) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 20));
    await f.close();
    expect((await pending).msg.stopReason).toBe('error');
  });
});
