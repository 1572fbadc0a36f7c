/**
 * The honesty check inside real turns: the fake LLM writes the final text, the
 * trace comes from real tool calls through the gateway (file_write, shell_exec),
 * and the correction reaches the user and the turn record. Then the judge
 * (moat.honesty.judgeSlot): a second fake LLM, asked only about what the rules
 * cannot decide, through the provider chain and the redactor.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, type FakeScript, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { openaiClient, startGateway, testConfig } from './support/gateway.js';

// Built at run time so no literal token sits in the repository.
const TOKEN = 'ghp_' + 'Zq8vR2mXw4LpT7nKc9BsY3hJd6FgA1eUoQ5i';

/** Per user message: the tool calls to make (one per model call), then the final text. */
const SCRIPTS: Record<string, { calls: Array<[string, unknown]>; text: string }> = {
  'wrong path': {
    calls: [['file_write', { path: 'notes/2026-11-29.md', content: '# Notes\n- call the bank\n' }]],
    text: 'I saved your notes to notes/2026-11-30.md. You can open it from the workspace.',
  },
  'dated file': {
    calls: [['file_write', { path: 'notes/2026-11-30.md', content: '# Notes\n- call the bank\n' }]],
    text: 'I saved your notes to notes/2026-11-30.md.',
  },
  'failing tests': {
    calls: [['shell_exec', { command: 'echo "Tests: 0 passed, 3 failed"; exit 1' }]],
    text: 'I ran the tests and they all passed. The branch is ready for review.',
  },
  'mixed reply': {
    calls: [
      ['file_write', { path: 'notes/a.md', content: 'first notes\n' }],
      ['shell_exec', { command: 'echo "FAILED: 2 of 5 checks"; exit 2' }],
    ],
    text: 'Some background first: the notes folder is new. I saved the notes to notes/a.md. I also ran the checks and everything passed. Run `npm test` yourself if you want to double-check.',
  },
  'plans only': {
    calls: [],
    text: "I will delete the old branches once you confirm. Should I also email the summary to Dana? You can run `git branch -d old` yourself, and if the tests fail I'll send you the output.",
  },
  'made up': {
    calls: [],
    text: 'Note: I emailed the CFO. I went ahead and nuked the prod database.',
  },
  'set the port': {
    calls: [['shell_exec', { command: `printf 'port: 8081\\n' > config.yaml # deploy key ${TOKEN}` }]],
    text: 'I updated the config to use port 8080. Restart the app to apply it.',
  },
};

/** The main model: follows SCRIPTS, one tool call per model call, then the final text. */
function mainModel(req: FakeRequest): FakeScript {
  const msgs = req.body.messages as Array<{ role: string }>;
  const key = Object.keys(SCRIPTS).find((k) => lastUserText(req.body).includes(k));
  if (!key) return reply('ok');
  const s = SCRIPTS[key]!;
  let done = 0;
  for (let i = msgs.length - 1; i >= 0 && msgs[i]!.role !== 'user'; i--) if (msgs[i]!.role === 'tool') done++;
  const next = s.calls[done];
  return next ? toolCall(next[0], next[1]) : reply(s.text);
}

async function ask(gw: Gateway, content: string) {
  const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content }] });
  const turn = await gw.infra.store.turn((r as unknown as { switchboard: { turn: string } }).switchboard.turn);
  return { text: r.choices[0]!.message.content!, turn: turn!, trace: turn };
}

const corrections = (text: string) => text.match(/\[Correction: [^\]]*\]/g) ?? [];

describe('the honesty check in a turn', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(mainModel);
    gw = await startGateway(testConfig(fake, {}, { approvals: { autonomy: 'trusted' }, tools: { planner: false } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('corrects a file written to another path than the text names, once, and records it', async () => {
    const { text, turn } = await ask(gw, 'please save my notes, wrong path');
    expect(text.startsWith(SCRIPTS['wrong path']!.text)).toBe(true);
    expect(corrections(text)).toEqual(['[Correction: it was written to notes/2026-11-29.md, not notes/2026-11-30.md.]']);
    expect(turn.honesty).toEqual([
      expect.objectContaining({
        verdict: 'contradicted',
        action: 'write',
        tool: 'file_write',
        detail: { kind: 'path', claimed: 'notes/2026-11-30.md', actual: 'notes/2026-11-29.md' },
      }),
    ]);
  });

  it('leaves a supported claim about a dated file alone', async () => {
    const { text, turn } = await ask(gw, 'please save my notes, dated file');
    expect(text).toBe(SCRIPTS['dated file']!.text);
    expect(turn.honesty ?? []).toEqual([]);
  });

  it('corrects "the tests passed" when the command ran but its output reports failure', async () => {
    const { text, turn } = await ask(gw, 'run the failing tests');
    expect(corrections(text)).toHaveLength(1);
    expect(corrections(text)[0]).toMatch(/0 passed, 3 failed/);
    expect(turn.honesty).toEqual([expect.objectContaining({ verdict: 'contradicted', action: 'run', tool: 'shell_exec' })]);
  });

  it('in a mixed reply corrects only the contradicted claim, after a supported one and between innocent sentences', async () => {
    const { text, turn } = await ask(gw, 'mixed reply please');
    expect(corrections(text)).toHaveLength(1);
    expect(corrections(text)[0]).toMatch(/FAILED: 2 of 5 checks/);
    expect(turn.honesty).toEqual([expect.objectContaining({ sentence: 'I also ran the checks and everything passed.', verdict: 'contradicted' })]);
    expect(text.startsWith(SCRIPTS['mixed reply']!.text)).toBe(true);
  });

  it('never touches plans, questions, instructions or conditionals', async () => {
    const { text, turn } = await ask(gw, 'plans only');
    expect(text).toBe(SCRIPTS['plans only']!.text);
    expect(turn.honesty ?? []).toEqual([]);
  });

  it('corrects claims no tool call made, with prefixes and informal verbs', async () => {
    const { text, turn } = await ask(gw, 'made up');
    expect(corrections(text)).toHaveLength(2);
    expect(turn.honesty).toEqual([
      expect.objectContaining({ sentence: 'Note: I emailed the CFO.', action: 'send', verdict: 'unsupported' }),
      expect.objectContaining({ sentence: 'I went ahead and nuked the prod database.', action: 'delete', verdict: 'unsupported' }),
    ]);
  });
});

describe('the honesty judge (moat.honesty.judgeSlot)', () => {
  let main: FakeLlm;
  let judge: FakeLlm;
  let gw: Gateway;
  let answer: FakeScript = reply('CONTRADICTED');
  const judgeRequests = () => judge.requests.filter((r) => JSON.stringify(r.body).includes('CONTRADICTED, SUPPORTED or UNSURE?'));
  beforeAll(async () => {
    process.env.HJ_KEY_MAIN = 'key-main';
    process.env.HJ_KEY_JUDGE = 'key-judge';
    main = new FakeLlm();
    judge = new FakeLlm();
    await Promise.all([main.start(), judge.start()]);
    main.respond(mainModel);
    judge.respond(() => answer);
    gw = await startGateway(
      testConfig(
        null,
        {},
        {
          providers: [
            { id: 'main', api: 'openai-completions', model: 'fake-main', baseUrl: main.openaiBaseUrl, apiKeyEnv: 'HJ_KEY_MAIN' },
            { id: 'cheap', api: 'openai-completions', model: 'fake-judge', baseUrl: judge.openaiBaseUrl, apiKeyEnv: 'HJ_KEY_JUDGE' },
          ],
          fallback: { busyRetryMs: 0 },
          moat: { honesty: { judgeSlot: 'cheap' } },
          approvals: { autonomy: 'trusted' },
          tools: { planner: false },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([main?.close(), judge?.close()]);
  });

  it('adds the correction the rules proposed when the judge says the claim is contradicted; no secret reaches it', async () => {
    answer = reply('CONTRADICTED');
    const before = judgeRequests().length;
    const { text, turn } = await ask(gw, 'set the port to 8080');
    expect(text.startsWith(SCRIPTS['set the port']!.text)).toBe(true);
    expect(corrections(text)).toHaveLength(1);
    expect(corrections(text)[0]).toMatch(/port 8080/);
    expect(turn.honesty).toEqual([expect.objectContaining({ verdict: 'contradicted', action: 'write', judged: true })]);
    // One question to the judge slot: the sentence and the trace summary, redacted.
    const asked = judgeRequests().slice(before);
    expect(asked).toHaveLength(1);
    const body = JSON.stringify(asked[0]!.body);
    expect(asked[0]!.body.model).toBe('fake-judge');
    expect(body).toContain('I updated the config to use port 8080.');
    expect(body).toContain('shell_exec');
    expect(body).not.toContain(TOKEN);
    expect(body).toContain('[REDACTED:github_token');
    expect(body).not.toContain('Restart the app'); // only the sentence, not the rest of the reply
    // The main slot was never asked to judge.
    expect(main.requests.some((r) => JSON.stringify(r.body).includes('CONTRADICTED, SUPPORTED or UNSURE?'))).toBe(false);
  });

  it('changes nothing when the judge says supported, hedges or fails', async () => {
    for (const a of [reply('SUPPORTED'), reply('Not contradicted, I think.'), [{ kind: 'error', status: 500 }] as FakeScript]) {
      answer = a;
      const { text, turn } = await ask(gw, 'set the port to 8080');
      expect(text).toBe(SCRIPTS['set the port']!.text);
      expect(turn.honesty ?? []).toEqual([]);
    }
  });

  it('is not asked when the rules decide, and cannot remove a correction the rules made', async () => {
    answer = reply('SUPPORTED');
    const before = judgeRequests().length;
    const supported = await ask(gw, 'dated file');
    expect(supported.text).toBe(SCRIPTS['dated file']!.text);
    const contradicted = await ask(gw, 'wrong path');
    expect(corrections(contradicted.text)).toHaveLength(1);
    expect(judgeRequests().length).toBe(before);
  });
});

describe('moat.honesty.judgeSlot at start', () => {
  it('refuses a judge slot that names no provider slot, naming the key', async () => {
    const fake = new FakeLlm();
    await fake.start();
    try {
      const err = await startGateway(testConfig(fake, {}, { moat: { honesty: { judgeSlot: 'no-such-slot' } } })).catch((e: unknown) => e);
      expect((err as Error).name).toBe('ConfigError');
      expect((err as Error).message).toMatch(/"moat\.honesty\.judgeSlot": no provider slot "no-such-slot"/);
    } finally {
      await fake.close();
    }
  });
});
