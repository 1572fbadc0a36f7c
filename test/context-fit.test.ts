/**
 * Context always fits (issue #21): whatever the summarizer returns, no request a
 * model slot receives exceeds that slot's window. Measured on the bodies the fake
 * LLM records, as a provider would: the body's characters / 4 plus the max_tokens asked.
 */
import type { Api, Message, Model } from '@mariozechner/pi-ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCooldowns } from '../adapters/cooldowns/memory.js';
import type { Gateway } from '../app/gateway.js';
import { Redactor } from '../moat/secrets.js';
import { type Attempt, FallbackChain } from '../providers/chain.js';
import { capSummary, chunks, SUMMARY_CUT_MARKER, summaryCap } from '../src/compaction.js';
import { configSchema } from '../src/config.js';
import { answerTokens, dropOldest, fitToModel, inputBudget, SUMMARY_MESSAGE_HEADER } from '../src/context-fit.js';
import { sendToProvider } from '../src/provider-request.js';
import { requestTokens } from '../src/token-estimate.js';
import { FakeLlm, type FakeRequest, type FakeScript, lastUserText, reply } from './fakes/fake-llm.js';
import { openaiClient, startGateway, testConfig } from './support/gateway.js';

const isSummarizer = (req: FakeRequest) => JSON.stringify(req.body.messages).includes('running summary of a conversation');
/** What a provider counts: the whole request body, and the answer's room. */
const bodyBytes = (req: FakeRequest) => Buffer.byteLength(JSON.stringify(req.body));
const bodyTokens = (req: FakeRequest) => Math.ceil(JSON.stringify(req.body).length / 4) + (req.body.max_tokens ?? 0);
const systemText = (req: FakeRequest) => (req.body.messages as Array<{ role: string; content: unknown }>).find((m) => m.role === 'system')?.content as string;

/** A summarizer that ignores maxTokens: its "summary" is everything it was given, and more. */
const echoingSummarizer = (req: FakeRequest): FakeScript => reply(`${lastUserText(req.body)}\n${lastUserText(req.body)}`);

function expectWithin(reqs: FakeRequest[], window: number) {
  expect(reqs.length).toBeGreaterThan(0);
  for (const q of reqs) {
    expect(bodyTokens(q), `request ${q.index} (${isSummarizer(q) ? 'summarizer' : 'model'})`).toBeLessThanOrEqual(window);
    expect(bodyBytes(q)).toBeLessThanOrEqual(window * 4);
  }
}

const ZERO = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const user = (text: string, timestamp = 0): Message => ({ role: 'user', content: text, timestamp });
const said = (text: string, timestamp = 0): Message => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  api: 'openai-completions',
  provider: 'x',
  model: 'x',
  usage: ZERO,
  stopReason: 'stop',
  timestamp,
});
const calls = (id: string, command: string, timestamp = 0): Message => ({
  role: 'assistant',
  content: [{ type: 'toolCall', id, name: 'shell_exec', arguments: { command } }],
  api: 'openai-completions',
  provider: 'x',
  model: 'x',
  usage: ZERO,
  stopReason: 'toolUse',
  timestamp,
});
const result = (id: string, text: string, timestamp = 0): Message => ({
  role: 'toolResult',
  toolCallId: id,
  toolName: 'shell_exec',
  content: [{ type: 'text', text }],
  isError: false,
  timestamp,
});

/** Conversation helpers over a running gateway: the id of a conversation, and old messages put straight into its transcript. */
async function conversationId(gw: Gateway, name: string): Promise<string> {
  return (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like $1`, [`%/${name}/%`])).rows[0]!.id;
}
async function seedMessages(gw: Gateway, conv: string, msgs: Message[]) {
  const turn = (await gw.infra.store.db.query<{ id: string }>('select id from turns where conversation_id = $1 limit 1', [conv])).rows[0]!.id;
  for (let i = 0; i < msgs.length; i += 50) {
    const params: unknown[] = [conv, turn];
    const values: string[] = [];
    for (const m of msgs.slice(i, i + 50)) {
      params.push(JSON.stringify(m));
      values.push(`($1, $2, '${m.role}', $${params.length}::jsonb)`);
    }
    await gw.infra.store.db.query(`insert into messages (conversation_id, turn_id, role, content) values ${values.join(',')}`, params);
  }
}

describe('every request fits an 8,000-token window, whatever the summarizer returns', () => {
  const WINDOW = 8_000;
  let fake: FakeLlm;
  let gw: Gateway;
  let summarizer: (req: FakeRequest) => FakeScript = echoingSummarizer;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      if (isSummarizer(req)) return summarizer(req);
      const n = /^turn (\d+)/.exec(lastUserText(req.body))?.[1] ?? '?';
      return reply(`answer ${n}: ${'noted, and here is what I think about it. '.repeat(4)}`);
    });
    // A hundred turns in a minute or so: the per-key rate limit would answer 429.
    gw = await startGateway(testConfig(fake, {}, { provider: { contextWindow: WINDOW }, limits: { apiKey: 'off' } }));
  }, 180_000);
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('100 turns of ~600 characters: every request within the window, the summary capped and marked, every turn answered', async () => {
    const client = openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': 'hundred-turns' });
    const before = fake.requests.length;
    for (let i = 0; i < 100; i++) {
      const text = `turn ${i}: ${`the user keeps talking about item ${i} and its many details; `.repeat(12)}`.slice(0, 600);
      const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: text }] });
      expect(r.choices[0]!.message.content).toMatch(new RegExp(`^answer ${i}:`));
    }
    const sent = fake.requests.slice(before);
    expectWithin(sent, WINDOW);
    const summarized = sent.filter(isSummarizer);
    expect(summarized.length).toBeGreaterThan(3); // compacted again and again, never stacked
    // The summary the model carries is the summarizer's output cut to its cap, marked as cut.
    const carrying = sent.filter((q) => !isSummarizer(q) && systemText(q).includes('Summary of the earlier conversation'));
    expect(carrying.length).toBeGreaterThan(50);
    for (const q of carrying) expect(systemText(q)).toContain(SUMMARY_CUT_MARKER);
    const conv = await conversationId(gw, 'hundred-turns');
    const row = (await gw.infra.store.db.query<{ summary: string }>('select summary from conversations where id = $1', [conv])).rows[0]!;
    expect(row.summary.endsWith(SUMMARY_CUT_MARKER)).toBe(true);
    expect(row.summary.length).toBeLessThanOrEqual(1024 * 4);
  }, 240_000);

  it('an old part larger than the window is summarized chunk by chunk, each request within the window', async () => {
    const client = openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': 'chunked' });
    await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'turn 0: I like tea.' }] });
    const conv = await conversationId(gw, 'chunked');
    // ~60,000 characters (~15,000 tokens) of old transcript: nearly twice the window.
    const old: Message[] = [];
    for (let i = 0; i < 100; i++) old.push(user(`fact ${i}: ${'a detail worth keeping '.repeat(12)}`, i), said(`noted ${i}: ${'ok '.repeat(80)}`, i));
    await seedMessages(gw, conv, old);
    let n = 0;
    summarizer = () => reply(`SUMMARY ${++n}: the user listed facts.`);
    const before = fake.requests.length;
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'turn 1: what do you know?' }] });
    expect(r.choices[0]!.message.content).toMatch(/^answer 1:/);
    const sent = fake.requests.slice(before);
    const summarizing = sent.filter(isSummarizer);
    expect(summarizing.length).toBeGreaterThanOrEqual(3);
    expectWithin(sent, WINDOW);
    // Each chunk after the first folds the running summary in; the model gets the last one.
    for (const [i, q] of summarizing.entries()) {
      if (i === 0) expect(lastUserText(q.body)).not.toContain('Previous summary:');
      else expect(lastUserText(q.body)).toContain(`Previous summary:\nSUMMARY ${i}: the user listed facts.`);
    }
    expect(lastUserText(summarizing[0]!.body)).toContain('fact 0:');
    expect(summarizing.some((q) => lastUserText(q.body).includes('fact 40:'))).toBe(true);
    const answer = sent.find((q) => !isSummarizer(q))!;
    expect(systemText(answer)).toContain(`SUMMARY ${summarizing.length}: the user listed facts.`);
    summarizer = echoingSummarizer;
  }, 120_000);
});

describe('drop-oldest: a request that still does not fit loses its oldest verbatim messages', () => {
  const WINDOW = 8_000;
  const SMALL = 8_000;
  let fake: FakeLlm;
  let main: FakeLlm;
  let small: FakeLlm;
  let gw: Gateway;
  let fallback: Gateway;
  // With the tool definitions (~1,300 tokens) and the latest message (~500), a system prompt of ~2,500 tokens
  // nearly fills what an 8,000-token window leaves after the answer's room (2,000) and the estimate's margin.
  const instructions = `Follow the house style. ${'Always be precise and kind in every answer you give. '.repeat(170)}`;
  const answer = (req: FakeRequest) =>
    isSummarizer(req) ? [{ kind: 'error' as const, status: 400 }] : reply(`answered: ${lastUserText(req.body).slice(0, 12)}`);
  beforeAll(async () => {
    fake = new FakeLlm();
    main = new FakeLlm();
    small = new FakeLlm();
    await Promise.all([fake.start(), main.start(), small.start()]);
    fake.respond(answer);
    // The primary fails the question that matters; the fallback slot has a smaller window.
    main.respond((req) => (lastUserText(req.body).startsWith('LATEST') ? [{ kind: 'error', status: 500 }] : answer(req)));
    small.respond(answer);
    const agents = { default: { instructions } };
    gw = await startGateway(testConfig(fake, {}, { provider: { contextWindow: WINDOW }, tools: { planner: false }, agents }));
    process.env.CF_KEY = 'k';
    fallback = await startGateway(
      testConfig(
        null,
        {},
        {
          providers: [
            { id: 'main', api: 'openai-completions', model: 'm', baseUrl: main.openaiBaseUrl, apiKeyEnv: 'CF_KEY', contextWindow: 64_000 },
            { id: 'small', api: 'openai-completions', model: 's', baseUrl: small.openaiBaseUrl, apiKeyEnv: 'CF_KEY', contextWindow: SMALL },
          ],
          fallback: { busyRetryMs: 0 },
          tools: { planner: false },
          agents,
        },
      ),
    );
  }, 180_000);
  afterAll(async () => {
    await gw?.close();
    await fallback?.close();
    await Promise.all([fake?.close(), main?.close(), small?.close()]);
  });

  /** Old exchanges with tool calls, the oldest marked, then one more question. */
  async function talk(g: Gateway, name: string) {
    const client = openaiClient(g.url!, undefined, { 'X-Switchboard-Conversation': name });
    await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'hello' }] });
    const conv = await conversationId(g, name);
    const old: Message[] = [];
    for (let i = 0; i < 12; i++)
      old.push(
        user(`${i === 0 ? 'OLDEST ' : ''}question ${i} ${'q'.repeat(200)}`),
        calls(`call_${i}`, `echo ${i}`),
        result(`call_${i}`, `output ${i} ${'r'.repeat(400)}`),
        said(`reply ${i}`),
      );
    await seedMessages(g, conv, old);
    return client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `LATEST ${'z'.repeat(2_000)}` }] });
  }

  function expectPairsKept(q: FakeRequest) {
    const msgs = q.body.messages as Array<{ role: string; content: unknown; tool_calls?: Array<{ id: string }>; tool_call_id?: string }>;
    const callIds = new Set(msgs.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []));
    const resultIds = new Set(msgs.filter((m) => m.role === 'tool').map((m) => m.tool_call_id!));
    expect(callIds.size).toBeGreaterThan(0); // some exchanges are kept...
    expect([...resultIds].sort()).toEqual([...callIds].sort()); // ...each call with its result
    const text = JSON.stringify(msgs);
    expect(text).not.toContain('OLDEST'); // ...and the oldest are gone
    expect(text).toContain('LATEST');
  }

  it('the system prompt and the latest message nearly fill the window: older messages dropped, pairs kept together, answered', async () => {
    const before = fake.requests.length;
    const r = await talk(gw, 'drop-oldest');
    expect(r.choices[0]!.message.content).toBe('answered: LATEST zzzzz');
    const sent = fake.requests.slice(before);
    expectWithin(sent, WINDOW);
    const q = sent.filter((x) => !isSummarizer(x)).at(-1)!;
    expect(systemText(q)).toContain('Follow the house style.');
    expectPairsKept(q);
  }, 60_000);

  it('a fallback slot with a smaller window than the primary gets a request that fits its own window', async () => {
    const before = small.requests.length;
    const r = await talk(fallback, 'drop-oldest-fallback');
    expect(r.choices[0]!.message.content).toBe('answered: LATEST zzzzz');
    expect(main.requests.some((q) => bodyTokens(q) > SMALL)).toBe(true); // the primary was sent more than the fallback could take
    const sent = small.requests.slice(before);
    expectWithin(sent, SMALL);
    expectPairsKept(sent.filter((x) => !isSummarizer(x)).at(-1)!);
  }, 60_000);
});

describe('fitting a request into a window', () => {
  const model = { contextWindow: 8_000, maxTokens: 4_096 };
  const words = (n: number) => 'w'.repeat(n);

  it('keeps at most a quarter of the window for the answer, and a margin for the estimate', () => {
    expect(answerTokens(model)).toBe(2_000);
    expect(answerTokens(model, 500)).toBe(500);
    expect(answerTokens({ contextWindow: 200_000, maxTokens: 64_000 })).toBe(32_000); // as pi-ai sends it
    expect(inputBudget(model)).toBeLessThan(6_000);
    expect(inputBudget(model, 500)).toBeGreaterThan(inputBudget(model));
  });

  it('sends a request that fits as it is, and lowers a maxTokens larger than its room', () => {
    const context = { systemPrompt: 'be brief', messages: [user('hi'), said('hello'), user('bye')] };
    const f = fitToModel(context, model, 6_000)!;
    expect(f.context).toBe(context);
    expect(f.dropped).toBe(0);
    expect(f.maxTokens).toBe(2_000);
  });

  it('drops whole exchanges, oldest first, and keeps the latest user message', () => {
    const msgs = [
      user(`old ${words(4_000)}`),
      calls('a', 'ls'),
      result('a', words(4_000)),
      said('done'),
      user(`mid ${words(4_000)}`),
      said('ok'),
      user('now?'),
    ];
    const f = fitToModel({ systemPrompt: words(12_000), messages: msgs }, model)!;
    expect(f.dropped).toBe(4);
    expect(f.context.messages).toEqual(msgs.slice(4));
    expect(requestTokens(f.context)).toBeLessThanOrEqual(inputBudget(model));
  });

  it('in the current tool loop, drops a call only with its results, and keeps the newest', () => {
    const msgs = [
      user('go'),
      calls('a', 'one'),
      result('a', words(6_000)),
      calls('b', 'two'),
      result('b', words(6_000)),
      calls('c', 'three'),
      result('c', words(6_000)),
    ];
    const kept = dropOldest(msgs, 4_000)!;
    expect(kept).toEqual([msgs[0], msgs[3], msgs[4], msgs[5], msgs[6]]);
    expect(dropOldest(msgs, 2_000)).toEqual([msgs[0], msgs[5], msgs[6]]);
    expect(dropOldest(msgs, 1_000)).toBeNull(); // the newest call and result alone are too large
  });

  it('a leading summary message goes last, after every verbatim message', () => {
    const summary = user(`${SUMMARY_MESSAGE_HEADER}\n${words(2_000)}`);
    const msgs = [summary, user(`a ${words(4_000)}`), said('b'), user('c')];
    expect(dropOldest(msgs, 800)).toEqual([summary, msgs[3]]);
    expect(dropOldest(msgs, 100)).toEqual([msgs[3]]);
    expect(dropOldest(msgs, 0)).toBeNull();
  });

  it('a request that cannot fit is not sent to that slot', () => {
    expect(fitToModel({ systemPrompt: words(30_000), messages: [user('hi')] }, model)).toBeNull();
    expect(fitToModel({ messages: [user(words(30_000))] }, model)).toBeNull();
  });

  it('caps a summary with a visible marker, within the share of the window', () => {
    expect(capSummary('short', 100)).toBe('short');
    const cut = capSummary(`${'word '.repeat(1_000)}end`, 100);
    expect(cut.endsWith(`\n${SUMMARY_CUT_MARKER}`)).toBe(true);
    expect(cut.length).toBeLessThanOrEqual(400);
    expect(cut).not.toContain('end');
    expect(summaryCap(5_000, {})).toBe(750);
    expect(summaryCap(100_000, {})).toBe(1_024);
    expect(summaryCap(100_000, { summaryMaxTokens: 300 })).toBe(300);
  });

  it('packs transcript lines into chunks, splitting a line longer than a chunk', () => {
    expect(chunks(['aa', 'bb', 'cc'], 5)).toEqual(['aa\nbb', 'cc']);
    expect(chunks([words(12)], 5)).toEqual(['wwwww', 'wwwww', 'ww']);
    for (const c of chunks(
      Array.from({ length: 50 }, (_, i) => `line ${i} ${words(i * 7)}`),
      100,
    ))
      expect(c.length).toBeLessThanOrEqual(100);
  });
});

describe('the chain fits each attempt to its slot', () => {
  let tiny: FakeLlm;
  let big: FakeLlm;
  beforeAll(async () => {
    tiny = new FakeLlm();
    big = new FakeLlm();
    await Promise.all([tiny.start(), big.start()]);
    tiny.respond(() => reply('tiny answers'));
    big.respond(() => reply('big answers'));
  });
  afterAll(async () => {
    await Promise.all([tiny?.close(), big?.close()]);
  });
  const model = (fake: FakeLlm, contextWindow: number) =>
    ({
      id: 'm',
      name: 'm',
      api: 'openai-completions',
      provider: 'local',
      baseUrl: fake.openaiBaseUrl,
      reasoning: false,
      input: ['text'],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow,
      maxTokens: 1000,
      compat: { supportsDeveloperRole: false, supportsStore: false, maxTokensField: 'max_tokens' },
    }) as Model<Api>;
  async function send(slots: Array<[FakeLlm, number]>, systemChars: number) {
    const chain = new FallbackChain(
      slots.map(([f, w], i) => ({ id: `slot${i}-${w}`, model: model(f, w), apiKey: 'k' })),
      new MemoryCooldowns(),
      { ...configSchema.parse({}).fallback, busyRetryMs: 0 },
    );
    const attempts: Attempt[] = [];
    const s = sendToProvider(
      chain,
      { system: ['x'.repeat(systemChars)], messages: [user('hi')] },
      { redactor: new Redactor(), policy: 'redact', hooks: { onAttempt: (a) => attempts.push(a) } },
    );
    const m = await s.result();
    return { m, attempts };
  }

  it('a slot whose window the request cannot fit is not sent it; a larger one answers', async () => {
    const before = tiny.requests.length;
    const { m, attempts } = await send(
      [
        [tiny, 2_000],
        [big, 100_000],
      ],
      20_000,
    );
    expect(m.content).toEqual([{ type: 'text', text: 'big answers' }]);
    expect(tiny.requests.length).toBe(before);
    expect(attempts.map((a) => `${a.slot}:${a.error}`)).toEqual(['slot0-2000:context_overflow', 'slot1-100000:ok']);
  });

  it('no slot can take it: nothing is sent, and the error says why', async () => {
    const before = tiny.requests.length;
    const { m } = await send([[tiny, 2_000]], 20_000);
    expect(m.stopReason).toBe('error');
    expect(m.errorMessage).toContain('no slot has a large enough context window');
    expect(tiny.requests.length).toBe(before);
  });
});
