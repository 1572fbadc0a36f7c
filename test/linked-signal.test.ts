/**
 * Abort signals must not outlive the work they guard. The openai SDK adds an
 * 'abort' listener to every request's signal and never removes it; on Node 20
 * a signal from AbortSignal.any with a listener is kept by the process until it
 * aborts, so each model call leaked (a worker grew by ~2 kB a turn).
 */
import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type Api, type Model, streamSimple } from '@mariozechner/pi-ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCooldowns } from '../adapters/cooldowns/memory.js';
import { linkedSignal } from '../kernel/linked-signal.js';
import { FallbackChain } from '../providers/chain.js';
import { configSchema } from '../src/config.js';
import { FakeLlm, reply } from './fakes/fake-llm.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** How many of the tracked objects the garbage collector has freed, after a few full collections. */
async function collected(registry: { freed: number }, expected: number): Promise<number> {
  for (let i = 0; i < 20 && registry.freed < expected; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  return registry.freed;
}

function tracker() {
  const t = { freed: 0, registry: new FinalizationRegistry<void>(() => t.freed++) };
  return t;
}

describe('linkedSignal', () => {
  it('aborts when any parent aborts, with that parent’s reason', () => {
    const a = new AbortController();
    const b = new AbortController();
    const link = linkedSignal(a.signal, undefined, b.signal);
    expect(link.signal.aborted).toBe(false);
    b.abort(new Error('stop'));
    expect(link.signal.aborted).toBe(true);
    expect((link.signal.reason as Error).message).toBe('stop');
    // ...and lets go of the other parent at once.
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(0);
  });

  it('starts aborted when a parent already is', () => {
    const a = new AbortController();
    a.abort('gone');
    const link = linkedSignal(new AbortController().signal, a.signal);
    expect(link.signal.aborted).toBe(true);
    expect(link.signal.reason).toBe('gone');
  });

  it('after dispose, no longer follows its parents and leaves no listener on them', () => {
    const parent = new AbortController();
    const link = linkedSignal(parent.signal);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    link.dispose();
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    parent.abort();
    expect(link.signal.aborted).toBe(false);
  });

  it('is collected after dispose even when someone never removed its listener', async () => {
    const parent = new AbortController(); // long-lived, like a job's signal
    const t = tracker();
    // In its own (non-async) function, so no suspended frame keeps the last one alive.
    const useOnce = () => {
      const link = linkedSignal(parent.signal);
      link.signal.addEventListener('abort', () => {}, { once: true }); // as the openai SDK does
      t.registry.register(link.signal);
      link.dispose();
    };
    for (let i = 0; i < 50; i++) useOnce();
    expect(await collected(t, 50)).toBe(50);
  });
});

describe('model calls through the provider chain', () => {
  let fake: FakeLlm;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(() => reply('hello there'));
  });
  afterAll(() => fake.close());

  it('leave nothing behind: every signal handed to the SDK is freed once its call is over', async () => {
    const model = {
      id: 'fake-model',
      name: 'fake',
      api: 'openai-completions',
      provider: 'local',
      baseUrl: fake.openaiBaseUrl,
      reasoning: false,
      input: ['text'],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 8000,
      maxTokens: 1000,
      compat: { supportsDeveloperRole: false, supportsStore: false, maxTokensField: 'max_tokens' },
    } as Model<Api>;
    const t = tracker();
    // The real pi-ai/openai path; we only note each signal it is given.
    const observed: typeof streamSimple = (m, c, o) => {
      if (o?.signal) t.registry.register(o.signal);
      return streamSimple(m, c, o);
    };
    const chain = new FallbackChain([{ id: 'A', model, apiKey: 'k' }], new MemoryCooldowns(), configSchema.parse({}).fallback, observed);
    const turn = new AbortController(); // the turn's signal outlives each call
    const calls = 20;
    for (let i = 0; i < calls; i++) {
      const s = chain.stream({ systemPrompt: 's', messages: [{ role: 'user', content: `hi ${i}`, timestamp: Date.now() }] }, { signal: turn.signal }, {});
      let text = '';
      for await (const ev of s) if (ev.type === 'text_delta') text += ev.delta;
      expect(text).toBe('hello there');
    }
    expect(await collected(t, calls)).toBe(calls);
    expect(getEventListeners(turn.signal, 'abort')).toHaveLength(0);
  });
});
