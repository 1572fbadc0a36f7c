/**
 * The upstream request body for one message, as the gateway sends it to the
 * model: the default configuration (every built-in tool, the default prompt
 * slots), the fake LLM recording what it receives, one-off chat requests over
 * the HTTP API. Prints the body's size in bytes next to the target (4 KB for
 * "hi") and what it is made of: the system prompt, each tool definition, the
 * messages. A second message in the same conversation shows the offer once
 * there is history (the planner offers every tool to a follow-up).
 *
 *   npm run build && node dist/bench/request-size.js [--message hi] [--follow 'yes, do that'] [--target 4096] [--show]
 */
import { parseArgs } from 'node:util';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, reply } from '../test/fakes/fake-llm.js';
import { API_KEY, startGateway, testConfig } from '../test/support/gateway.js';
import { createTestDatabase } from '../test/support/postgres.js';
import { TestRedis } from '../test/support/redis.js';

const { values } = parseArgs({
  options: {
    message: { type: 'string', default: 'hi' },
    target: { type: 'string', default: '4096' },
    follow: { type: 'string', default: 'yes, do that' },
    show: { type: 'boolean', default: false },
  },
});
const target = Number(values.target);
const bytes = (v: unknown) => Buffer.byteLength(typeof v === 'string' ? v : JSON.stringify(v));

async function ask(gw: Gateway, text: string, user: string): Promise<void> {
  const res = await fetch(`${gw.url!}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'default', user, messages: [{ role: 'user', content: text }] }),
  });
  if (!res.ok) throw new Error(`gateway answered ${res.status}: ${await res.text()}`);
  await res.text();
}

function describe(label: string, raw: string): number {
  const body = JSON.parse(raw) as { messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function: { name: string } }> };
  const total = Buffer.byteLength(raw);
  const system = body.messages.filter((m) => m.role === 'system' || m.role === 'developer');
  const rest = body.messages.filter((m) => m.role !== 'system' && m.role !== 'developer');
  console.log(`${label}: ${total} B`);
  console.log(`  system prompt   ${String(system.reduce((a, m) => a + bytes(m.content), 0)).padStart(6)} B`);
  console.log(`  messages        ${String(rest.reduce((a, m) => a + bytes(m), 0)).padStart(6)} B (${rest.length})`);
  const tools = body.tools ?? [];
  console.log(
    `  tools           ${String(bytes(tools)).padStart(6)} B (${tools.length}: ${tools.map((t) => `${t.function.name} ${bytes(t)}`).join(', ') || 'none'})`,
  );
  if (values.show) console.log(JSON.stringify(body, null, 1));
  return total;
}

async function main(): Promise<void> {
  const fake = new FakeLlm();
  await fake.start();
  fake.respond(() => reply('ok'));
  const redis = await TestRedis.start();
  const db = await createTestDatabase();
  const gw = await startGateway(testConfig(fake, { redisUrl: redis.url, databaseUrl: db.url }));
  try {
    const raw: string[] = [];
    const capture = () => {
      const r = fake.requests.at(-1)!;
      raw.push(JSON.stringify(r.body));
    };
    await ask(gw, values.message!, 'bench-user');
    capture();
    const first = describe(`"${values.message}", first message of a conversation`, raw[0]!);
    console.log(`  target ≤ ${target} B: ${first <= target ? 'met' : 'NOT met'} (${((100 * first) / target).toFixed(0)}% of it)\n`);
    // One conversation: the HTTP API keys a conversation by its messages; send the history along.
    const res = await fetch(`${gw.url!}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'default',
        user: 'bench-user',
        messages: [
          { role: 'user', content: values.message },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: values.follow },
        ],
      }),
    });
    await res.text();
    capture();
    describe(`"${values.follow}", with history`, raw[1]!);
  } finally {
    await gw.close();
    await fake.close();
    await redis.stop();
    await db.drop().catch(() => {});
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
