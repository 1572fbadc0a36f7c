/**
 * Issue #19, "Secrets reached the provider": every request the gateway sends
 * goes through src/provider-request.ts, so no secret reaches a provider from
 * any part of any request — a turn's user message, the agent's instructions,
 * memory notes, tool output, the model's own earlier messages, the stored
 * history and running summary the summarizer reads (at the start of a turn and
 * inside one), the summarizer and judge slots, and a one-off request's system
 * and assistant messages. Checked in both secret policies: `redact` sends
 * placeholders, `block` refuses what a person wrote and sends nothing.
 *
 * Every body the fake LLMs receive is serialized whole and searched for every
 * secret planted in the run.
 */
import { randomBytes } from 'node:crypto';
import type { AgentTool } from '@mariozechner/pi-agent-core';
import { type Api, type Model, Type } from '@mariozechner/pi-ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCooldowns } from '../adapters/cooldowns/memory.js';
import type { Gateway } from '../app/gateway.js';
import { Redactor, scanText } from '../moat/secrets.js';
import { FallbackChain } from '../providers/chain.js';
import { runAgent } from '../src/agent-loop.js';
import { configSchema } from '../src/config.js';
import { FakeLlm, type FakeRequest, type FakeScript, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { openaiClient, startGateway, testConfig } from './support/gateway.js';

const WINDOW = 4_000; // tokens: small, so that compaction runs

// Built at run time so no literal token sits in the repository.
const ALNUM = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
const alnum = (n: number) => [...randomBytes(n)].map((b) => ALNUM[b % ALNUM.length]).join('');
const MAKERS = [() => 'sk_' + 'live_' + alnum(24), () => 'ghp_' + alnum(36), () => 'xoxb-' + '1234567890-1234567890123-' + alnum(24), () => 'npm_' + alnum(36)];
let made = 0;
const planted: string[] = [];
function secret(): string {
  const make = MAKERS[made++ % MAKERS.length]!;
  // A random tail can spell a placeholder ("xxxx", "your", "here": secret-rules.ts reports those as
  // not secrets) about once in a thousand: draw again, so that every planted value is a real secret.
  let s = make();
  while (scanText(`value ${s} end`).length !== 1) s = make();
  planted.push(s);
  return s;
}
/** The last part of a stripe key, printed by a tool from pieces so the user's message holds no secret. */
let TOOL_TAIL = alnum(24);
// Drawn again when the tail spells a placeholder, as secret() does.
while (scanText(`value ${'sk_' + 'live_' + TOOL_TAIL} end`).length !== 1) TOOL_TAIL = alnum(24);
const TOOL_SECRET = 'sk_' + 'live_' + TOOL_TAIL;
planted.push(TOOL_SECRET);

const isSummarizer = (req: FakeRequest) => JSON.stringify(req.body.messages).includes('running summary of a conversation');
const isJudge = (req: FakeRequest) => JSON.stringify(req.body).includes('CONTRADICTED, SUPPORTED or UNSURE?');
const bodyOf = (req: FakeRequest) => JSON.stringify(req.body);
const leaks = (reqs: readonly FakeRequest[]) =>
  reqs.flatMap((r) => planted.filter((s) => bodyOf(r).includes(s)).map((s) => `request ${r.index} carries ${s.slice(0, 8)}…`));
const toolText = (req: FakeRequest) => JSON.stringify((req.body.messages as Array<{ role: string }>).filter((m) => m.role === 'tool'));

/** The main model: tool loops on cue, a secret of its own on cue, else "ok: <last user text>". */
function mainModel(modelSecret: string) {
  let loop = 0; // a long tool loop: its first message is summarized away, so the model counts its calls
  return (req: FakeRequest): FakeScript => {
    if (isSummarizer(req)) return reply('SUMMARY: the user talked about keys.');
    const msgs = req.body.messages as Array<{ role: string }>;
    const t = lastUserText(req.body);
    const lastRole = msgs[msgs.length - 1]!.role;
    if (t.startsWith('long loop') && lastRole === 'user') loop = 1;
    // Mid-loop, compaction may fold every earlier step into the summary, which is then the last message.
    const folded = t.startsWith('[Summary of the earlier conversation');
    if (loop && (lastRole === 'tool' || loop === 1 || folded))
      return loop++ <= 10 ? toolCall('shell_exec', { command: 'seq 1 400' }) : ((loop = 0), reply('loop finished'));
    let calls = 0;
    for (let i = msgs.length - 1; i >= 0 && msgs[i]!.role !== 'user'; i--) if (msgs[i]!.role === 'tool') calls++;
    if (t.startsWith('print: ')) return calls ? reply('printed it') : toolCall('shell_exec', { command: t.slice(7) });
    // The model writes a secret itself (text and tool-call arguments): the next call sends it back, redacted.
    if (t.startsWith('own secret'))
      return calls
        ? reply('done with it')
        : [
            { kind: 'text', text: `I will use ${modelSecret} now.` },
            { kind: 'toolCall', name: 'current_time', args: { timeZone: modelSecret } },
          ];
    if (t.includes('set the port'))
      return calls
        ? reply('I updated the config to use port 8080. Restart the app to apply it.')
        : toolCall('shell_exec', { command: `printf 'port: 8081\\n' > config.yaml # deploy key ${modelSecret}` });
    return reply(`ok: ${t.slice(0, 40)}`);
  };
}

const assistantRow = (text: string) => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  api: 'openai-completions',
  provider: 'x',
  model: 'x',
  usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
  stopReason: 'stop',
  timestamp: 0,
});

async function conversationId(gw: Gateway, name: string): Promise<string> {
  return (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like $1`, [`%/${name}/%`])).rows[0]!.id;
}

/** A long stored transcript (so the turn compacts first), with the given messages planted in the part that is summarized, and a running summary. */
async function seedHistory(gw: Gateway, conv: string, planted: Array<Record<string, unknown>>, summary: string | null) {
  const turn = (await gw.infra.store.db.query<{ id: string }>('select id from turns where conversation_id = $1 limit 1', [conv])).rows[0]!.id;
  // The turn loads the newest 200 (historyLimit) and keeps the newest ~60 (keepRecent): the planted ones fall in between.
  const filler = (from: number) =>
    Array.from({ length: 150 }, (_, k) =>
      k % 2 === 0 ? { role: 'user', content: `number ${from + k} is ${'x'.repeat(100)}`, timestamp: from + k } : assistantRow(`noted ${from + k}`),
    );
  const rows: Array<Record<string, unknown>> = [...filler(0), ...planted, ...filler(150)];
  const params: unknown[] = [conv, turn];
  const values = rows.map((m) => {
    params.push(JSON.stringify(m));
    return `($1, $2, '${m.role as string}', $${params.length}::jsonb)`;
  });
  await gw.infra.store.db.query(`insert into messages (conversation_id, turn_id, role, content) values ${values.join(',')}`, params);
  if (summary) await gw.infra.store.db.query('update conversations set summary = $2 where id = $1', [conv, summary]);
}

describe.each(['redact', 'block'] as const)('no secret reaches a provider (moat.secrets: %s)', (policy) => {
  const S = {
    user: secret(),
    agent: secret(),
    memory: secret(),
    model: secret(),
    historyUser: secret(),
    historyAssistant: secret(),
    summary: secret(),
    loopUser: secret(),
    oneOffSystem: secret(),
    oneOffUser: secret(),
    oneOffAssistant: secret(),
    cheapHistory: secret(),
    cheapSummary: secret(),
  };
  let fake: FakeLlm;
  let main: FakeLlm;
  let cheap: FakeLlm;
  let gw: Gateway;
  let slots: Gateway;
  const refused = /^Your message was not sent to the model: it contains what looks like a secret \([a-z_, ]+\)\. Remove it and try again\.$/;
  const ask = (g: Gateway, content: string, opts: { conversation?: string; agent?: string } = {}) =>
    openaiClient(g.url!, undefined, opts.conversation ? { 'X-Switchboard-Conversation': opts.conversation } : {}).chat.completions.create({
      model: opts.agent ?? 'default',
      messages: [{ role: 'user', content }],
    });
  const textOf = (r: Awaited<ReturnType<typeof ask>>) => r.choices[0]!.message.content ?? '';

  beforeAll(async () => {
    for (const s of planted) expect(scanText(`value ${s} end`).map((f) => f.start)).toEqual([6]); // each is a secret the scanner knows
    fake = new FakeLlm();
    main = new FakeLlm();
    cheap = new FakeLlm();
    await Promise.all([fake.start(), main.start(), cheap.start()]);
    fake.respond(mainModel(S.model));
    main.respond(mainModel(S.model));
    cheap.respond((req) => (isJudge(req) ? reply('CONTRADICTED') : reply('SUMMARY from the cheap slot.')));
    const common = { moat: { secrets: policy }, tools: { planner: false }, approvals: { autonomy: 'trusted' } };
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          ...common,
          provider: { contextWindow: WINDOW },
          agents: { default: {}, keyed: { instructions: `Deploy with the key ${S.agent} when asked.` } },
        },
      ),
    );
    process.env.PR_KEY = 'fake-key';
    slots = await startGateway(
      testConfig(
        null,
        {},
        {
          ...common,
          providers: [
            { id: 'main', api: 'openai-completions', model: 'm', baseUrl: main.openaiBaseUrl, apiKeyEnv: 'PR_KEY', contextWindow: WINDOW },
            { id: 'cheap', api: 'openai-completions', model: 'c', baseUrl: cheap.openaiBaseUrl, apiKeyEnv: 'PR_KEY', contextWindow: WINDOW },
          ],
          fallback: { busyRetryMs: 0 },
          compaction: { summarizerSlot: 'cheap' },
          moat: { secrets: policy, honesty: { judgeSlot: 'cheap' } },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await slots?.close();
    await Promise.all([fake?.close(), main?.close(), cheap?.close()]);
  });

  it('a turn: the user message, the agent instructions and the memory notes', async () => {
    // The agent's instructions carry a secret: sent as a placeholder, or (block) nothing is sent.
    const before = fake.requests.length;
    const r1 = await ask(gw, 'hello there', { conversation: 'keyed', agent: 'keyed' });
    if (policy === 'redact') {
      expect(textOf(r1)).toBe('ok: hello there');
      expect(bodyOf(fake.requests[before]!)).toMatch(/Deploy with the key \[REDACTED:[a-z_]+#1\] when asked/);
    } else {
      expect(textOf(r1)).toMatch(
        /^This request was not sent to the model: what looks like a secret \([a-z_]+\) is in its agent instructions, and secrets are blocked here/,
      );
      expect(fake.requests.length).toBe(before);
    }

    // A memory note carrying a secret (planted in the store: the memory guard would refuse it).
    await ask(gw, 'first message', { conversation: 'noted' });
    await gw.infra.store.db.query(`insert into memory (scope, scope_key, body) values ('conversation', $1, $2)`, [
      await conversationId(gw, 'noted'),
      `The billing key is ${S.memory}.`,
    ]);
    const before2 = fake.requests.length;
    const r2 = await ask(gw, 'what do you remember?', { conversation: 'noted' });
    if (policy === 'redact') {
      expect(bodyOf(fake.requests[before2]!)).toMatch(/The billing key is \[REDACTED:[a-z_]+#1\]/);
    } else {
      expect(textOf(r2)).toMatch(/^This request was not sent to the model: what looks like a secret \([a-z_]+\) is in its memory notes/);
      expect(fake.requests.length).toBe(before2);
    }

    // The user's own message.
    const before3 = fake.requests.length;
    const r3 = await ask(gw, `my key is ${S.user}, keep ${S.user} safe`, { conversation: 'plain' });
    if (policy === 'redact') {
      expect(bodyOf(fake.requests[before3]!)).toMatch(/my key is \[REDACTED:([a-z_]+)#1\], keep \[REDACTED:\1#1\] safe/);
    } else {
      expect(textOf(r3)).toMatch(refused);
      expect(fake.requests.length).toBe(before3);
    }
    expect(leaks(fake.requests)).toEqual([]);
  });

  it('a turn with tool output carrying a secret, and with a secret the model wrote itself', async () => {
    // The command prints a stripe key from pieces: the user's message holds none, the output does.
    const before = fake.requests.length;
    const r = await ask(gw, `print: printf 'sk_%s_%s' live ${TOOL_TAIL}`);
    expect(textOf(r)).toBe('printed it');
    const afterTool = fake.requests.slice(before).find((q) => toolText(q).includes('<untrusted'))!;
    expect(toolText(afterTool)).toContain('[REDACTED:stripe_key#1]'); // the command ran and printed the key...
    expect(bodyOf(afterTool)).not.toContain(TOOL_SECRET); // ...which the model never saw

    // The model's own text and tool-call arguments carry a secret: the next call sends them back redacted (in both policies).
    const before2 = fake.requests.length;
    const r2 = await ask(gw, 'own secret please');
    expect(textOf(r2)).toContain('done with it');
    const second = fake.requests[before2 + 1]!;
    expect(bodyOf(second)).toMatch(/I will use \[REDACTED:[a-z_]+#1\] now/);
    expect(bodyOf(second)).toMatch(/timeZone\\+"\s*:\s*\\+"\[REDACTED:[a-z_]+#1\]/);
    expect(leaks(fake.requests)).toEqual([]);
  });

  it('compaction at the start of a turn: the stored history and the running summary the summarizer reads', async () => {
    // What the model wrote (an assistant message, the summary) goes out redacted in both policies...
    await ask(gw, 'I like tea.', { conversation: 'long-model' });
    await seedHistory(
      gw,
      await conversationId(gw, 'long-model'),
      [{ role: 'user', content: 'tell me a key', timestamp: 0 }, assistantRow(`Here is one: ${S.historyAssistant}`)],
      `The user once used ${S.summary}.`,
    );
    const before = fake.requests.length;
    const r = await ask(gw, 'what now?', { conversation: 'long-model' });
    expect(textOf(r)).toBe('ok: what now?');
    const sent = fake.requests.slice(before);
    // The old part is larger than the 4,000-token window: summarized in chunks, the first folding in the stored summary.
    const summarizer = sent.filter(isSummarizer);
    expect(summarizer.length).toBeGreaterThanOrEqual(1);
    expect(bodyOf(summarizer[0]!)).toMatch(/Previous summary:\\n\s*The user once used \[REDACTED:[a-z_]+#\d\]/);
    expect(summarizer.some((q) => /Here is one: \[REDACTED:[a-z_]+#\d\]/.test(bodyOf(q)))).toBe(true);
    expect(bodyOf(sent.find((q) => !isSummarizer(q))!)).toContain('SUMMARY: the user talked about keys.');

    // ...a user's secret in the stored history too (redact); block refuses the turn before any request, summarizer included.
    await ask(gw, 'I like coffee.', { conversation: 'long-user' });
    await seedHistory(
      gw,
      await conversationId(gw, 'long-user'),
      [{ role: 'user', content: `use ${S.historyUser} for the deploy`, timestamp: 0 }, assistantRow('ok')],
      null,
    );
    const before2 = fake.requests.length;
    const r2 = await ask(gw, 'and now?', { conversation: 'long-user' });
    if (policy === 'redact') {
      expect(textOf(r2)).toBe('ok: and now?');
      expect(
        fake.requests
          .slice(before2)
          .filter(isSummarizer)
          .some((q) => /use \[REDACTED:[a-z_]+#1\] for the deploy/.test(bodyOf(q))),
      ).toBe(true);
    } else {
      expect(textOf(r2)).toMatch(
        /^This request was not sent to the model: what looks like a secret \([a-z_]+\) is in its earlier messages of this conversation/,
      );
      expect(fake.requests.length).toBe(before2);
    }
    expect(leaks(fake.requests)).toEqual([]);
  });

  it('compaction inside a turn: a tool loop that outgrows the window', async () => {
    const before = fake.requests.length;
    // In block mode the user's message must be clean to be sent at all; the model's secret and the tool output are in the loop either way.
    const r = await ask(gw, policy === 'redact' ? `long loop with ${S.loopUser}` : 'long loop please');
    expect(textOf(r)).toBe('loop finished');
    const sent = fake.requests.slice(before);
    expect(sent.filter(isSummarizer).length).toBeGreaterThan(0);
    if (policy === 'redact') expect(bodyOf(sent.find(isSummarizer)!)).toMatch(/long loop with \[REDACTED:[a-z_]+#1\]/);
    expect(leaks(fake.requests)).toEqual([]);
  });

  it('the summarizer slot and the honesty judge slot', async () => {
    await ask(slots, 'I like tea.', { conversation: 'slots' });
    await seedHistory(
      slots,
      await conversationId(slots, 'slots'),
      [{ role: 'user', content: 'a key?', timestamp: 0 }, assistantRow(`Try ${S.cheapHistory}`)],
      `The user once used ${S.cheapSummary}.`,
    );
    const r = await ask(slots, 'please set the port to 8080', { conversation: 'slots' });
    expect(textOf(r)).toMatch(/^I updated the config to use port 8080\./);
    const summaries = cheap.requests.filter(isSummarizer);
    expect(summaries.length).toBeGreaterThanOrEqual(1); // in chunks when the old part outgrows the window
    expect(summaries.some((q) => /Try \[REDACTED:[a-z_]+#\d\]/.test(bodyOf(q)))).toBe(true);
    expect(main.requests.some(isSummarizer)).toBe(false);
    // The main model put a secret in its tool call; the judge reads the call's summary.
    expect(cheap.requests.filter(isJudge)).toHaveLength(1);
    expect(bodyOf(cheap.requests.find(isJudge)!)).toContain('[REDACTED:');
    expect(leaks(main.requests)).toEqual([]);
    expect(leaks(cheap.requests)).toEqual([]);
  });

  it("a one-off request's system, user and assistant messages", async () => {
    const client = openaiClient(gw.url!);
    const messages = [
      { role: 'system' as const, content: `You are the ops bot. The vault key is ${S.oneOffSystem}.` },
      { role: 'user' as const, content: `earlier I sent ${S.oneOffUser}` },
      { role: 'assistant' as const, content: `Noted, ${S.oneOffAssistant} is stored.` },
      { role: 'user' as const, content: 'which keys do you know?' },
    ];
    const before = fake.requests.length;
    const r = await client.chat.completions.create({ model: 'default', messages });
    if (policy === 'redact') {
      expect(textOf(r)).toBe('ok: which keys do you know?');
      const body = bodyOf(fake.requests[before]!);
      expect(body).toMatch(/The vault key is \[REDACTED:[a-z_]+#1\]/);
      expect(body).toMatch(/earlier I sent \[REDACTED:[a-z_]+#\d\]/);
      expect(body).toMatch(/Noted, \[REDACTED:[a-z_]+#\d\] is stored/);
    } else {
      expect(textOf(r)).toMatch(refused);
      expect(fake.requests.length).toBe(before);
      // Each part alone is refused too: the system message, the assistant message.
      for (const only of [
        [messages[0]!, { role: 'user' as const, content: 'hi' }],
        [{ role: 'user' as const, content: 'hi' }, messages[2]!, { role: 'user' as const, content: 'and?' }],
      ]) {
        const r1 = await client.chat.completions.create({ model: 'default', messages: only });
        expect(textOf(r1)).toMatch(refused);
      }
      expect(fake.requests.length).toBe(before);
    }
    expect(leaks(fake.requests)).toEqual([]);
  });

  it('across everything above, no request body carried any planted secret', () => {
    expect(fake.requests.length + main.requests.length + cheap.requests.length).toBeGreaterThan(5);
    expect(leaks([...fake.requests, ...main.requests, ...cheap.requests])).toEqual([]);
  });
});

describe.each(['redact', 'block'] as const)('a message that joins a running turn (steer), moat.secrets: %s', (policy) => {
  let fake: FakeLlm;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => ((req.body.messages as Array<{ role: string }>).some((m) => m.role === 'tool') ? reply('done') : toolCall('note', {})));
  });
  afterAll(() => fake?.close());

  it('goes out redacted, or (block) the call that would carry it is refused and the loop stops', async () => {
    const steered = secret();
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
    const chain = new FallbackChain([{ id: 'a', model, apiKey: 'k' }], new MemoryCooldowns(), { ...configSchema.parse({}).fallback, busyRetryMs: 0 });
    const tool: AgentTool = {
      name: 'note',
      label: 'note',
      description: 'take a note',
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: 'text', text: 'noted' }], details: {} }),
    };
    let polls = 0;
    const before = fake.requests.length;
    const r = await runAgent(
      {
        systemPrompt: 'You take notes.',
        history: [],
        prompts: [{ role: 'user', content: 'take a note', timestamp: Date.now() }],
        tools: [tool],
        chain,
        maxIterations: 5,
        secrets: { redactor: new Redactor(), policy },
        // Polled before the first call and after each tool round (and on no fixed count): the message arrives once, after the first call.
        getSteeringMessages: async () =>
          !polls && fake.requests.length > before && ++polls ? [{ role: 'user', content: `also use ${steered}`, timestamp: Date.now() }] : [],
      },
      { onText: () => {} },
    );
    const sent = fake.requests.slice(before);
    if (policy === 'redact') {
      expect(r.finishReason).toBe('stop');
      expect(sent).toHaveLength(2);
      expect(bodyOf(sent[1]!)).toMatch(/also use \[REDACTED:[a-z_]+#1\]/);
    } else {
      expect(r.finishReason).toBe('blocked_secret');
      expect(r.blocked).toMatchObject({ fromUser: true, where: ['user message'] });
      expect(sent).toHaveLength(1); // the second call was never made
    }
    expect(leaks(sent)).toEqual([]);
  });
});
