/**
 * Fallback overhead: the time from a slot's failure being detected to the first
 * token from the next slot, minus that slot's own time to first token.
 * Prints figures; asserts nothing.
 *
 *   npm run build && node dist/bench/fallback.js [--iterations 300]
 */
import { parseArgs } from 'node:util';
import { type Api, type Model, streamSimple } from '@mariozechner/pi-ai';
import { MemoryCooldowns } from '../adapters/cooldowns/memory.js';
import { FallbackChain } from '../providers/chain.js';
import { configSchema } from '../src/config.js';
import { FakeLlm, type FakeScript, reply } from '../test/fakes/fake-llm.js';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '300' } } });
const N = Number(values.iterations);

const model = (fake: FakeLlm): Model<Api> =>
  ({
    id: 'fake',
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
  }) as Model<Api>;

const ctx = { systemPrompt: 's', messages: [{ role: 'user' as const, content: 'hi', timestamp: 0 }] };
const pct = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(2)}  p90 ${pct(xs, 90).toFixed(2)}  p99 ${pct(xs, 99).toFixed(2)} ms`;

async function main(): Promise<void> {
  const a = new FakeLlm({ recordRequests: false });
  const b = new FakeLlm({ recordRequests: false });
  await Promise.all([a.start(), b.start()]);
  b.respond(() => reply(Array.from({ length: 20 }, (_, i) => `tok${i}`).join(' ')));

  // The next slot's own time to first token, asked directly.
  const own: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    let first = 0;
    for await (const ev of streamSimple(model(b), ctx, { apiKey: 'k', maxRetries: 0 })) if (!first && ev.type === 'text_delta') first = performance.now() - t0;
    own.push(first);
  }
  console.log(`next slot's own time to first token:        ${fmt(own)}`);

  const settings = { ...configSchema.parse({}).fallback, busyRetryMs: 0 };
  for (const [label, script] of [
    ['failure before any output (HTTP 500)', [{ kind: 'error', status: 500 }]],
    ['failure mid-stream (dropped after 10 tokens)', [{ kind: 'disconnect', afterTokens: 10, text: Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ') }]],
  ] as Array<[string, FakeScript]>) {
    a.respond(() => script);
    const overhead: number[] = [];
    for (let i = 0; i < N; i++) {
      // A fresh cooldown store each time, so that the failing slot is always tried first.
      const chain = new FallbackChain(
        [
          { id: 'A', model: model(a), apiKey: 'k' },
          { id: 'B', model: model(b), apiKey: 'k' },
        ],
        new MemoryCooldowns(),
        settings,
      );
      let failedAt = 0;
      let firstFromB = 0;
      const s = chain.stream(ctx, {}, { onAttempt: (x) => void (x.slot === 'A' && (failedAt = performance.now())) });
      for await (const ev of s) if (failedAt && !firstFromB && ev.type === 'text_delta') firstFromB = performance.now();
      overhead.push(firstFromB - failedAt);
    }
    console.log(`${label}:`);
    console.log(`  failure detected → first token of next slot: ${fmt(overhead)}`);
    console.log(
      `  beyond the next slot's own latency:          p50 ${(pct(overhead, 50) - pct(own, 50)).toFixed(2)}  p99 ${(pct(overhead, 99) - pct(own, 99)).toFixed(2)} ms (difference of percentiles; ≤ 0 means lost in the noise)`,
    );
  }
  await Promise.all([a.close(), b.close()]);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
