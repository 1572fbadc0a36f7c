/** Compaction: long conversations and long tool loops stay inside the window without losing the running summary. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { estimateTokens, safeCut } from '../src/compaction.js';
import { FakeLlm, type FakeRequest, type FakeScript, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { openaiClient, startGateway, testConfig } from './support/gateway.js';

const WINDOW = 4_000; // tokens

const isSummarizer = (req: FakeRequest) => JSON.stringify(req.body.messages).includes('running summary of a conversation');
const requestTokens = (req: FakeRequest) => Math.ceil(JSON.stringify(req.body.messages).length / 4);

describe('compaction', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let summarizer: (req: FakeRequest) => FakeScript = () => reply('SUMMARY: the user counted numbers and likes tea.');
  let model: (req: FakeRequest) => FakeScript = (req) => reply(`ok ${lastUserText(req.body).slice(0, 20)}`);
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => (isSummarizer(req) ? summarizer(req) : model(req)));
    gw = await startGateway(testConfig(fake, {}, { provider: { contextWindow: WINDOW }, tools: { planner: false } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  /** Puts n old messages straight into a conversation's transcript. */
  async function seed(name: string, n: number) {
    const client = openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': name });
    await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'I like tea.' }] });
    const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like $1`, [`%/${name}/%`])).rows[0]!.id;
    const turn = (await gw.infra.store.db.query<{ id: string }>('select id from turns where conversation_id = $1', [conv])).rows[0]!.id;
    const values: string[] = [];
    const params: unknown[] = [conv, turn];
    for (let i = 0; i < n; i++) {
      const m =
        i % 2 === 0
          ? { role: 'user', content: `number ${i} is ${'x'.repeat(60)}`, timestamp: i }
          : {
              role: 'assistant',
              content: [{ type: 'text', text: `noted ${i}` }],
              api: 'openai-completions',
              provider: 'x',
              model: 'x',
              usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
              stopReason: 'stop',
              timestamp: i,
            };
      params.push(JSON.stringify(m));
      values.push(`($1, $2, '${m.role}', $${params.length}::jsonb)`);
    }
    await gw.infra.store.db.query(`insert into messages (conversation_id, turn_id, role, content) values ${values.join(',')}`, params);
    return { client, conv };
  }

  it('keeps a 500-message conversation under the window, and the model gets the running summary', async () => {
    const { client, conv } = await seed('long-talk', 500);
    const before = fake.requests.length;
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'what do I like?' }] });
    expect(r.choices[0]!.message.content).toMatch(/^ok what do I like/);
    const sent = fake.requests.slice(before);
    expect(sent.filter(isSummarizer)).toHaveLength(1);
    const answer = sent.find((q) => !isSummarizer(q))!;
    expect(requestTokens(answer)).toBeLessThan(WINDOW);
    expect(JSON.stringify(answer.body.messages)).toContain('SUMMARY: the user counted numbers and likes tea.');
    const row = (
      await gw.infra.store.db.query<{ summary: string; summary_upto: number }>('select summary, summary_upto from conversations where id = $1', [conv])
    ).rows[0]!;
    expect(row.summary).toContain('likes tea');
    expect(row.summary_upto).toBeGreaterThan(0);
    // The full transcript stays in Postgres.
    expect(
      (await gw.infra.store.db.query<{ n: number }>('select count(*)::int as n from messages where conversation_id = $1', [conv])).rows[0]!.n,
    ).toBeGreaterThan(500);
    // The next summary rolls the previous one up (it is given to the summarizer), it does not stack.
    await seedMore(conv, 300);
    const before2 = fake.requests.length;
    await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'and now?' }] });
    const summarizerCall = fake.requests.slice(before2).find(isSummarizer)!;
    expect(JSON.stringify(summarizerCall.body.messages)).toContain('Previous summary:');
  });

  async function seedMore(conv: string, n: number) {
    const turn = (await gw.infra.store.db.query<{ id: string }>('select id from turns where conversation_id = $1 limit 1', [conv])).rows[0]!.id;
    for (let i = 0; i < n; i += 50) {
      const params: unknown[] = [conv, turn];
      const values: string[] = [];
      for (let k = i; k < i + 50; k++) {
        params.push(JSON.stringify({ role: 'user', content: `later ${k} ${'y'.repeat(60)}`, timestamp: k }));
        values.push(`($1, $2, 'user', $${params.length}::jsonb)`);
      }
      await gw.infra.store.db.query(`insert into messages (conversation_id, turn_id, role, content) values ${values.join(',')}`, params);
    }
  }

  it('a summarizer that fails leaves the transcript intact, and the turn is still answered', async () => {
    summarizer = () => [{ kind: 'error', status: 400 }];
    const { client, conv } = await seed('no-summary', 400);
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'still there?' }] });
    expect(r.choices[0]!.message.content).toMatch(/^ok still there/);
    const row = (
      await gw.infra.store.db.query<{ summary: string | null; summary_upto: number }>('select summary, summary_upto from conversations where id = $1', [conv])
    ).rows[0]!;
    expect(row).toEqual({ summary: null, summary_upto: 0 });
    summarizer = () => reply('SUMMARY: the user counted numbers and likes tea.');
  });

  it('compacts in the middle of a 60-iteration tool loop that would overflow, and finishes', async () => {
    let calls = 0;
    model = (req) => {
      const msgs = req.body.messages as Array<{ role: string }>;
      if (msgs[msgs.length - 1]!.role !== 'tool') calls = 0;
      if (++calls <= 60) return toolCall('shell_exec', { command: 'seq 1 120' });
      return reply('finished all sixty');
    };
    const before = fake.requests.length;
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'count a lot, sixty times' }] });
    expect(r.choices[0]!.message.content).toBe('finished all sixty');
    const sent = fake.requests.slice(before).filter((q) => !isSummarizer(q));
    expect(sent).toHaveLength(61);
    expect(fake.requests.slice(before).filter(isSummarizer).length).toBeGreaterThan(0);
    for (const q of sent) expect(requestTokens(q)).toBeLessThan(WINDOW * 1.1);
    expect(JSON.stringify(sent[sent.length - 1]!.body.messages)).toContain('[Summary of the earlier conversation');
    model = (req) => reply(`ok ${lastUserText(req.body).slice(0, 20)}`);
  });

  it('a provider context-overflow error triggers one compact-and-retry', async () => {
    const { client } = await seed('overflow', 80); // under the threshold: only the provider's error makes it compact
    let overflowed = 0;
    model = (req) => {
      if (!JSON.stringify(req.body.messages).includes('[Summary of the earlier conversation') && overflowed++ === 0) {
        return [
          {
            kind: 'error',
            status: 400,
            body: {
              error: {
                message: "This model's maximum context length is 4000 tokens; your messages exceed the context window",
                type: 'invalid_request_error',
                code: 'context_length_exceeded',
              },
            },
          },
        ];
      }
      return reply('fits now');
    };
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'hello again' }] });
    expect(r.choices[0]!.message.content).toBe('fits now');
    expect(overflowed).toBe(1);
    model = (req) => reply(`ok ${lastUserText(req.body).slice(0, 20)}`);
  });
});

describe('safe cut points', () => {
  const u = (t: string) => ({ role: 'user' as const, content: t, timestamp: 0 });
  const a = (calls = false) => ({
    role: 'assistant' as const,
    content: calls ? [{ type: 'toolCall' as const, id: 'c', name: 't', arguments: {} }] : [{ type: 'text' as const, text: 'x'.repeat(400) }],
    api: 'x',
    provider: 'x',
    model: 'x',
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: 'stop' as const,
    timestamp: 0,
  });
  const r = () => ({
    role: 'toolResult' as const,
    toolCallId: 'c',
    toolName: 't',
    content: [{ type: 'text' as const, text: 'y'.repeat(400) }],
    isError: false,
    timestamp: 0,
  });
  it('never keeps a tool result without its call', () => {
    const msgs = [u('q'), a(true), r(), a(true), r(), a(true), r(), a()];
    for (let keep = 0; keep < 2000; keep += 50) {
      const cut = safeCut(msgs, keep);
      if (cut < msgs.length) expect(msgs[cut]!.role).not.toBe('toolResult');
    }
    expect(estimateTokens(msgs)).toBeGreaterThan(400);
  });
});

describe('a cheaper summarizer slot', () => {
  let main: FakeLlm;
  let cheap: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    main = new FakeLlm();
    cheap = new FakeLlm();
    await Promise.all([main.start(), cheap.start()]);
    main.respond((req) => (isSummarizer(req) ? reply('SUMMARY from the main model') : reply(`main: ${lastUserText(req.body)}`)));
    cheap.respond(() => reply('SUMMARY from the cheap model'));
    process.env.SB_MAIN_KEY = 'k';
    gw = await startGateway(
      testConfig(
        null,
        {},
        {
          providers: [
            { id: 'main', api: 'openai-completions', model: 'm', baseUrl: main.openaiBaseUrl, apiKeyEnv: 'SB_MAIN_KEY', contextWindow: WINDOW },
            { id: 'cheap', api: 'openai-completions', model: 'c', baseUrl: cheap.openaiBaseUrl, apiKeyEnv: 'SB_MAIN_KEY', contextWindow: WINDOW },
          ],
          compaction: { summarizerSlot: 'cheap' },
          tools: { planner: false },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([main?.close(), cheap?.close()]);
  });

  it('writes summaries with the configured slot, and answers with the first', async () => {
    const client = openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': 'cheap-sum' });
    for (let i = 0; i < 3; i++)
      await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `${i}: ${'long words here '.repeat(250)}` }] });
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'and now?' }] });
    expect(r.choices[0]!.message.content).toBe('main: and now?');
    expect(cheap.requests.some(isSummarizer)).toBe(true);
    expect(main.requests.some(isSummarizer)).toBe(false);
    expect(JSON.stringify(main.requests.at(-1)!.body.messages)).toContain('SUMMARY from the cheap model');
  });
});
