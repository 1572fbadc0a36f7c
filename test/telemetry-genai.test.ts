/**
 * A model call's span (src/telemetry/genai.ts) through the real OpenTelemetry SDK, kept in memory:
 * the server it names is the provider slot that answered (a fallback's, not the primary's), its
 * input tokens are the whole prompt's, and a played-back call reports none.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { serverOf, TurnTrace } from '../src/telemetry/genai.js';
import { contextWith, startSpan } from '../src/telemetry/tracer.js';

describe('model-call spans', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
  });
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
  });
  beforeEach(() => exporter.reset());

  const turn = () => {
    const span = startSpan('turn');
    return { span, t: new TurnTrace(contextWith(span), 'c_1') };
  };
  const chats = () => exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '));

  it('a fallback answered: the span names its provider and its server, not the primary', () => {
    const { span, t } = turn();
    t.chatStart({ id: 'gpt-x', provider: 'openai', baseUrl: 'https://api.openai.com/v1' });
    t.chatAttempt({ slot: 'primary', error: 'rate_limited', ms: 5 }, 'https://api.openai.com/v1');
    t.chatAttempt({ slot: 'backup', error: 'ok', ms: 9 }, 'http://[::1]:8081/v1');
    t.chatEnd({ model: 'claude-y', provider: 'anthropic', stopReason: 'stop', usage: { input: 10, output: 3, cacheRead: 5, cacheWrite: 2 } });
    span.end();
    const [chat] = chats();
    expect(chat!.attributes).toMatchObject({
      'gen_ai.request.model': 'gpt-x',
      'gen_ai.response.model': 'claude-y',
      'gen_ai.provider.name': 'anthropic',
      'server.address': '::1',
      'server.port': 8081,
      'gen_ai.usage.input_tokens': 17,
      'gen_ai.usage.cache_read.input_tokens': 5,
      'gen_ai.usage.cache_creation.input_tokens': 2,
      'gen_ai.usage.output_tokens': 3,
      'gen_ai.response.finish_reasons': ['stop'],
    });
    expect(chat!.events.map((e) => e.attributes?.['switchboard.provider.outcome'])).toEqual(['rate_limited', 'ok']);
  });

  it('the primary answered: its server, the scheme default port', () => {
    const { span, t } = turn();
    t.chatStart({ id: 'gpt-x', provider: 'openai', baseUrl: 'https://api.openai.com/v1' });
    t.chatEnd({ model: 'gpt-x', stopReason: 'toolUse', usage: { input: 4, output: 1 } });
    span.end();
    expect(chats()[0]!.attributes).toMatchObject({ 'server.address': 'api.openai.com', 'server.port': 443, 'gen_ai.usage.input_tokens': 4 });
    expect(chats()[0]!.attributes['gen_ai.usage.cache_read.input_tokens']).toBeUndefined();
  });

  it('a played-back response reports no tokens', () => {
    const { span, t } = turn();
    t.chatStart({ id: 'gpt-x', provider: 'openai' }, { replayed: true });
    t.chatEnd({ model: 'gpt-x', stopReason: 'toolUse', usage: { input: 4, output: 1 } });
    span.end();
    expect(chats()[0]!.attributes).toMatchObject({ 'switchboard.replayed': true, 'gen_ai.response.finish_reasons': ['tool_calls'] });
    expect(chats()[0]!.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
  });

  it('server.address of what is not a URL: none', () => {
    expect(serverOf(undefined)).toEqual({});
    expect(serverOf('not a url')).toEqual({});
    expect(serverOf('http://localhost/v1')).toEqual({ 'server.address': 'localhost', 'server.port': 80 });
  });
});
