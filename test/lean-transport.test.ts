/**
 * The lean openai-completions transport against the fake LLM on a real
 * socket, beside pi-ai's SDK path on the same scripts: the same request body,
 * the same events, the same final message, the same error classes.
 */

import { type Api, type AssistantMessage, type AssistantMessageEvent, type Context, type Model, streamSimple, Type } from '@mariozechner/pi-ai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCooldowns } from '../adapters/cooldowns/memory.js';
import { FallbackChain } from '../providers/chain.js';
import { classifyError } from '../providers/errors.js';
import { observeHttp } from '../providers/http-observer.js';
import { streamLeanOpenAICompletions } from '../providers/lean/openai-completions.js';
import { SseReader } from '../providers/lean/sse.js';
import { type StreamFn, streamFor } from '../providers/transport.js';
import { configSchema, loadConfig } from '../src/config.js';
import { FakeLlm, type FakeScript, reply, toolCall } from './fakes/fake-llm.js';

const lean = streamLeanOpenAICompletions as unknown as StreamFn;
const sdk = streamSimple;

function modelOf(fake: FakeLlm, patch: Partial<Model<Api>> = {}): Model<Api> {
  return {
    id: 'fake-model',
    name: 'fake',
    api: 'openai-completions',
    provider: 'local',
    baseUrl: fake.openaiBaseUrl,
    reasoning: false,
    input: ['text'],
    cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 8000,
    maxTokens: 1000,
    compat: { supportsDeveloperRole: false, supportsStore: false, maxTokensField: 'max_tokens' },
    ...patch,
  } as Model<Api>;
}

const tools = [
  { name: 'get_weather', description: 'Weather for a city', parameters: Type.Object({ city: Type.String() }) },
  { name: 'get_time', description: 'Time in a zone', parameters: Type.Object({ zone: Type.String() }) },
];
const context = (withTools = false): Context => ({
  systemPrompt: 'You are terse.',
  messages: [{ role: 'user', content: 'hi there', timestamp: 1 }],
  ...(withTools ? { tools } : {}),
});

interface Outcome {
  events: AssistantMessageEvent[];
  message: AssistantMessage;
  cls: string | undefined;
  status: number | undefined;
  retryAfterMs: number | undefined;
}

/** One call with `fn` under an HTTP observation, as the chain makes it; abortAfter aborts after that many text deltas. */
async function run(fn: StreamFn, model: Model<Api>, ctx: Context, opts: { abortAfter?: number } = {}): Promise<Outcome> {
  const ac = new AbortController();
  const events: AssistantMessageEvent[] = [];
  const call = observeHttp((headers) => fn(model, ctx, { apiKey: 'k', headers, signal: ac.signal, maxRetries: 0, sessionId: 'conv-1' }));
  let deltas = 0;
  for await (const ev of call.result) {
    // Events carry the live partial message: snapshot what each says at the time.
    events.push(structuredClone(ev));
    if (ev.type === 'text_delta' && ++deltas === opts.abortAfter) ac.abort();
  }
  const message = await call.result.result();
  call.release();
  const failed = message.stopReason === 'error' || message.stopReason === 'aborted';
  return {
    events,
    message,
    cls: failed ? (message.stopReason === 'aborted' ? 'aborted' : classifyError(message, call.observation)) : undefined,
    status: call.observation.status,
    retryAfterMs: call.observation.retryAfterMs,
  };
}

/**
 * What must match between the two paths: the events and the final message, without timestamps, ids and
 * error wording. An event's `partial` is the live message being built (the same object on both paths), so
 * what it holds when a consumer looks depends on timing, not on the transport: left out per event.
 */
/**
 * Consecutive text deltas of one block as one: the lean transport pushes the text of one network read
 * as one event (tokens that arrived together), the SDK one event per SSE event.
 */
function mergedDeltas(events: AssistantMessageEvent[]): AssistantMessageEvent[] {
  const out: AssistantMessageEvent[] = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (e.type === 'text_delta' && last?.type === 'text_delta' && last.contentIndex === e.contentIndex)
      out[out.length - 1] = { ...last, delta: last.delta + e.delta, partial: e.partial };
    else out.push(e);
  }
  return out;
}

function comparable(o: Outcome) {
  const strip = (m: AssistantMessage) => {
    const { timestamp: _t, responseId: _r, errorMessage, ...rest } = m;
    return { ...rest, failed: errorMessage !== undefined };
  };
  return {
    events: mergedDeltas(o.events).map((e) => {
      const { partial: _p, ...rest } = e as AssistantMessageEvent & { partial?: unknown };
      return { ...rest, ...('message' in e ? { message: strip(e.message) } : {}), ...('error' in e ? { error: strip(e.error) } : {}) };
    }),
    message: strip(o.message),
    cls: o.cls,
  };
}

const chunk = (delta: object, finish: string | null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'fake-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

describe('lean openai-completions transport', () => {
  let fake: FakeLlm;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
  });
  afterEach(() => fake.reset());
  afterAll(() => fake.close());

  /** Runs the script through both paths; returns both outcomes and both request bodies. */
  async function both(script: FakeScript, ctx = context(), opts: { abortAfter?: number } = {}) {
    const model = modelOf(fake);
    fake.enqueue(script);
    const s = await run(sdk, model, ctx, opts);
    fake.enqueue(script);
    const l = await run(lean, model, ctx, opts);
    const [sdkReq, leanReq] = fake.requests.slice(-2);
    return { s, l, sdkReq: sdkReq!, leanReq: leanReq! };
  }

  it('streams text with the same events, message, usage and request body as the SDK path', async () => {
    const { s, l, sdkReq, leanReq } = await both(reply('Hello there, how are you today?'));
    expect(l.message.stopReason).toBe('stop');
    expect(l.message.content).toEqual([{ type: 'text', text: 'Hello there, how are you today?' }]);
    // At most one event per token, their text the reply's.
    const deltas = l.events.filter((e) => e.type === 'text_delta') as Array<{ delta: string }>;
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.length).toBeLessThanOrEqual(6);
    expect(deltas.map((d) => d.delta).join('')).toBe('Hello there, how are you today?');
    expect(l.message.usage.output).toBe(6);
    expect(l.message.usage.input).toBeGreaterThan(0);
    expect(l.message.usage.cost.total).toBeGreaterThan(0);
    expect(leanReq.body).toEqual(sdkReq.body);
    expect(comparable(l)).toEqual(comparable(s));
    // The lean path is not the SDK: no SDK headers on its request.
    expect(sdkReq.headers['x-stainless-lang']).toBeDefined();
    expect(leanReq.headers['x-stainless-lang']).toBeUndefined();
    expect(leanReq.headers.authorization).toBe('Bearer k');
    expect(leanReq.headers['x-switchboard-call']).toBeUndefined();
  });

  it('pushes the text of one network read as one event, and tokens that arrive apart as events apart (nothing waits)', async () => {
    fake.enqueue(reply('one two three four', 40));
    const apart = await run(lean, modelOf(fake), context());
    expect((apart.events.filter((e) => e.type === 'text_delta') as Array<{ delta: string }>).map((e) => e.delta)).toEqual(['one ', 'two ', 'three ', 'four']);
    // All at once in one write: one event.
    fake.enqueue([
      { kind: 'raw', data: chunk({ content: 'one ' }, null) + chunk({ content: 'two ' }, null) + chunk({ content: 'three' }, 'stop') + 'data: [DONE]\n\n' },
    ]);
    const together = await run(lean, modelOf(fake), context());
    expect((together.events.filter((e) => e.type === 'text_delta') as Array<{ delta: string }>).map((e) => e.delta)).toEqual(['one two three']);
    expect(together.message.content).toEqual([{ type: 'text', text: 'one two three' }]);
  });

  it('assembles tool calls streamed in pieces, two in one message', async () => {
    const script: FakeScript = [
      { kind: 'text', text: 'Looking. ' },
      ...toolCall('get_weather', { city: 'Paris, France' }, 'call_a'),
      ...toolCall('get_time', { zone: 'Europe/Paris' }, 'call_b'),
    ];
    const { s, l, sdkReq, leanReq } = await both(script, context(true));
    expect(l.message.stopReason).toBe('toolUse');
    expect(l.message.content).toEqual([
      { type: 'text', text: 'Looking. ' },
      { type: 'toolCall', id: 'call_a', name: 'get_weather', arguments: { city: 'Paris, France' } },
      { type: 'toolCall', id: 'call_b', name: 'get_time', arguments: { zone: 'Europe/Paris' } },
    ]);
    expect(l.events.filter((e) => e.type === 'toolcall_delta').length).toBe(4);
    expect(leanReq.body.tools).toHaveLength(2);
    expect(leanReq.body).toEqual(sdkReq.body);
    expect(comparable(l)).toEqual(comparable(s));
  });

  it('maps finish reasons: length, and content_filter as an error', async () => {
    for (const [finish, stop] of [
      ['length', 'length'],
      ['content_filter', 'error'],
    ] as const) {
      const { s, l } = await both([{ kind: 'raw', data: chunk({ role: 'assistant', content: 'cut sh' }, null) + chunk({}, finish) + 'data: [DONE]\n\n' }]);
      expect(l.message.stopReason).toBe(stop);
      if (stop === 'error') expect(l.message.errorMessage).toContain('content_filter');
      expect(comparable(l)).toEqual(comparable(s));
    }
  });

  it('reports 4xx and 5xx as the SDK words them, and 429 with its Retry-After', async () => {
    for (const [step, cls] of [
      [{ kind: 'error', status: 400 }, 'bad_request'],
      [{ kind: 'error', status: 401 }, 'auth'],
      [{ kind: 'error', status: 500 }, 'server'],
      [{ kind: 'error', status: 503 }, 'overloaded'],
      [{ kind: 'error', status: 429, retryAfter: 7 }, 'rate_limit'],
      [{ kind: 'error', status: 502, body: 'upstream went away' }, 'server'],
    ] as const) {
      const { s, l } = await both([step]);
      expect(l.cls, `status ${step.status}`).toBe(cls);
      expect(l.status).toBe(step.status);
      expect(l.message.errorMessage).toBe(s.message.errorMessage);
      expect(comparable(l)).toEqual(comparable(s));
      if (step.status === 429) expect(l.retryAfterMs).toBe(7000);
    }
  });

  it('turns an error sent inside the stream into an error, as the SDK does', async () => {
    const { s, l } = await both([
      { kind: 'text', text: 'partial answer' },
      { kind: 'error', status: 500 },
    ]);
    expect(l.message.stopReason).toBe('error');
    expect(l.message.errorMessage).toBe(s.message.errorMessage);
    expect(l.cls).toBe(s.cls);
  });

  it('fails on a malformed event line, and skips comments and unknown fields', async () => {
    const bad = await both([
      { kind: 'text', text: 'one two ' },
      { kind: 'raw', data: 'data: {"choices": [ not json\n\n' },
    ]);
    expect(bad.l.message.stopReason).toBe('error');
    expect(bad.l.message.errorMessage).toMatch(/parse/i);
    expect(bad.l.cls).toBe(bad.s.cls);
    expect(bad.l.message.content).toEqual([{ type: 'text', text: 'one two ' }]);

    const odd = await both([{ kind: 'raw', data: ': keep-alive\r\nretry: 100\r\nid: 7\r\n' + chunk({ content: 'fine' }, null).replace(/\n/g, '\r\n') }]);
    expect(odd.l.message.stopReason).toBe('stop');
    expect(odd.l.message.content).toEqual([{ type: 'text', text: 'fine' }]);
    expect(comparable(odd.l)).toEqual(comparable(odd.s));
  });

  it('reports a stream cut mid-way as a network failure, keeping what streamed', async () => {
    const { s, l } = await both([{ kind: 'disconnect', afterTokens: 3, text: 'a b c d e f' }]);
    expect(l.message.stopReason).toBe('error');
    expect(l.cls).toBe('network');
    expect(s.cls).toBe('network');
    expect(
      l.events
        .filter((e) => e.type === 'text_delta')
        .map((e) => (e as { delta: string }).delta)
        .join(''),
    ).toBe('a b c ');
    // A connection refused before any byte is a network failure too.
    const gone = await run(lean, modelOf(fake, { baseUrl: 'http://127.0.0.1:9/v1' }), context());
    expect(gone.cls).toBe('network');
    expect(gone.message.errorMessage).toBe('Connection error.');
  });

  it('stops on the abort signal mid-stream and closes the connection', async () => {
    const { s, l } = await both([{ kind: 'stall', text: 'one two three four', afterTokens: 3 }], context(), { abortAfter: 1 });
    expect(l.message.stopReason).toBe('aborted');
    expect(l.cls).toBe('aborted');
    expect(s.message.stopReason).toBe('aborted');
    // Aborted before the request: no request at all.
    const ac = new AbortController();
    ac.abort();
    const before = fake.requests.length;
    const st = lean(modelOf(fake), context(), { apiKey: 'k', signal: ac.signal });
    expect((await st.result()).stopReason).toBe('aborted');
    expect(fake.requests.length).toBe(before);
  });

  it('is what a chain uses by default, and SWITCHBOARD_PROVIDER_TRANSPORT=sdk switches it back', async () => {
    expect(configSchema.parse({}).fallback.transport).toBe('lean');
    expect(loadConfig({ SWITCHBOARD_PROVIDER_TRANSPORT: 'sdk' }).fallback.transport).toBe('sdk');
    expect(() => loadConfig({ SWITCHBOARD_PROVIDER_TRANSPORT: 'fast' })).toThrow(/transport/);
    for (const transport of ['lean', 'sdk'] as const) {
      const chain = new FallbackChain([{ id: 'a', model: modelOf(fake), apiKey: 'k' }], new MemoryCooldowns(), {
        ...configSchema.parse({}).fallback,
        transport,
      });
      fake.enqueue(reply('via chain'));
      const st = chain.stream(context(), {}, {});
      for await (const _ of st);
      expect((await st.result()).content).toEqual([{ type: 'text', text: 'via chain' }]);
      expect(fake.requests.at(-1)!.headers['x-stainless-lang'] === undefined).toBe(transport === 'lean');
    }
  });

  it('leaves models it does not cover to the SDK path', async () => {
    fake.enqueue(reply('ok'));
    const st = streamFor('lean')(modelOf(fake, { provider: 'github-copilot' }), context(), { apiKey: 'k' });
    expect((await st.result()).stopReason).toBe('stop');
    expect(fake.requests.at(-1)!.headers['x-stainless-lang']).toBeDefined();
  });
});

describe('server-sent event reader', () => {
  it('joins data lines, keeps the event name, and flushes an event the body ended without a blank line after', () => {
    const seen: Array<[string, string | null]> = [];
    const r = new SseReader((d, e) => seen.push([d, e]));
    r.push('event: x\ndata: a\nda');
    r.push('ta: b\n\n: comment\ndata:c');
    r.end();
    expect(seen).toEqual([
      ['a\nb', 'x'],
      ['c', null],
    ]);
  });

  it('refuses a line or an event that grows past its limit (a server that never ends a line)', () => {
    const r = new SseReader(() => {}, 1024);
    expect(() => {
      for (let i = 0; i < 100; i++) r.push('x'.repeat(100));
    }).toThrow(/exceeded 1024/);
    const many = new SseReader(() => {}, 1024);
    expect(() => {
      for (let i = 0; i < 100; i++) many.push(`data: ${'y'.repeat(50)}\n`);
    }).toThrow(/exceeded 1024/);
  });
});
