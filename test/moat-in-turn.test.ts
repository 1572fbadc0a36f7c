/** The guards inside real turns: secrets never reach the provider, claims are checked, tools are planned, tool output is marked. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { openaiClient, startGateway, testConfig } from './support/gateway.js';

// Built at run time so no literal token sits in the repository.
const GH_TOKEN = 'ghp_' + 'Zq8vR2mXw4LpT7nKc9BsY3hJd6FgA1eUoQ5i';

describe('the moat inside a turn', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let blocking: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
      const last = msgs[msgs.length - 1]!;
      if (last.role === 'tool') return reply('I ran it and printed the token.');
      const t = lastUserText(req.body);
      if (t.startsWith('print: ')) return toolCall('shell_exec', { command: t.slice(7) });
      if (t.includes('delete')) return reply('I deleted the old backups. Anything else?');
      return reply(`ok: ${t}`);
    });
    gw = await startGateway(testConfig(fake, {}));
    blocking = await startGateway(testConfig(fake, {}, { moat: { secrets: 'block' } }));
  });
  afterAll(async () => {
    await gw?.close();
    await blocking?.close();
    await fake?.close();
  });

  it('redacts a secret in the user message before the provider sees it, with a stable placeholder', async () => {
    const before = fake.requests.length;
    const r = await openaiClient(gw.url!).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: `my token is ${GH_TOKEN}, keep ${GH_TOKEN} safe` }],
    });
    const sent = JSON.stringify(fake.requests[before]!.body);
    expect(sent).not.toContain(GH_TOKEN);
    expect(sent).toMatch(/my token is \[REDACTED:github_token#1\], keep \[REDACTED:github_token#1\] safe/);
    expect(r.choices[0]!.message.content).not.toContain(GH_TOKEN);
  });

  it('redacts secrets in tool output and marks the output as untrusted', async () => {
    const before = fake.requests.length;
    await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'print: echo hello' }] });
    const second = JSON.stringify(fake.requests[before + 1]!.body.messages);
    expect(second).toContain('<untrusted');
    expect(second).toContain('hello');
    // Now a tool that prints a secret (built from pieces so the user message itself holds none).
    const before2 = fake.requests.length;
    await openaiClient(gw.url!).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: `print: printf ghp_%s Zq8vR2mXw4LpT7nKc9BsY3hJd6FgA1eUoQ5i` }],
    });
    const afterTool = JSON.stringify(fake.requests[before2 + 1]!.body.messages);
    expect(afterTool).toContain('[REDACTED:github_token#1]'); // the command ran and printed the token...
    expect(afterTool).not.toContain(GH_TOKEN); // ...which the model never saw
  });

  it('blocks a message carrying a secret when the policy says block', async () => {
    const before = fake.requests.length;
    const r = await openaiClient(blocking.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `deploy with ${GH_TOKEN}` }] });
    expect(r.choices[0]!.message.content).toMatch(/not sent to the model.*github_token/);
    expect(fake.requests.length).toBe(before);
  });

  it('corrects a claim of action that no tool call supports, and records it on the turn', async () => {
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'please delete the old backups' }] });
    const text = r.choices[0]!.message.content!;
    expect(text).toMatch(/^I deleted the old backups\. Anything else\?/);
    expect(text).toMatch(/\[Correction: .*\]/);
    const turn = await gw.infra.store.turn((r as any).switchboard.turn);
    expect(turn!.honesty).toEqual([expect.objectContaining({ verdict: 'unsupported', action: 'delete' })]);
  });

  it('offers only the tools the request needs (planner guard)', async () => {
    const before = fake.requests.length;
    await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'what time is it in Paris?' }] });
    const offered = ((fake.requests[before]!.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(offered).toContain('current_time');
    expect(offered).not.toContain('shell_exec');
    expect(offered).not.toContain('file_write');
  });
});
