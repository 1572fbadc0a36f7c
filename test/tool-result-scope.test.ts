/**
 * A capped tool result is stored whole and paged with tool_result_page; the
 * stored copy belongs to its conversation: another conversation (another
 * user's, or an injected model guessing ids) reads nothing of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../src/gateway.js';
import { FakeLlm, reply, toolCall, type FakeRequest } from './fakes/fake-llm.js';
import { API_KEY, OTHER_KEY, eventually, openaiClient, startGateway, testConfig } from './support/gateway.js';

function model(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply('done');
  const text = String(last.content);
  let m: RegExpExecArray | null;
  if ((m = /^run: (.+)$/.exec(text))) return toolCall('shell_exec', { command: m[1] });
  if ((m = /^page: (\S+)$/.exec(text))) return toolCall('tool_result_page', { resultId: m[1], offset: 0, length: 200 });
  return reply('nothing to do');
}

describe('tool_result_page is scoped to its conversation', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(model);
    gw = await startGateway(testConfig(fake, {}, { tools: { outputCapBytes: 2048 } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  const toolText = async (key: string, conversation: string, text: string) => {
    const before = fake.requests.length;
    await openaiClient(gw.url!, key, { 'X-Switchboard-Conversation': conversation }).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: text }] });
    return eventually(async () => {
      for (const q of fake.requests.slice(before)) {
        const msgs = q.body.messages as Array<{ role: string; content: unknown }>;
        const last = msgs[msgs.length - 1]!;
        if (last.role === 'tool' && msgs.some((x) => x.role === 'user' && x.content === text)) return String(last.content);
      }
      return null;
    });
  };

  it('pages in its own conversation and reads as unknown from any other', async () => {
    const long = await toolText(API_KEY, 'owner-conv', 'run: seq 100000 100999');
    const id = /resultId "([^"]+)"/.exec(long)?.[1];
    expect(id).toBeTruthy();
    const mine = await toolText(API_KEY, 'owner-conv', `page: ${id}`);
    expect(mine).toContain('100000');
    expect(mine).toMatch(/bytes 0-200 of \d+/);
    // The same key in another conversation, and another key: nothing.
    for (const [key, conv] of [[API_KEY, 'other-conv'], [OTHER_KEY, 'thief-conv']] as const) {
      const theirs = await toolText(key, conv, `page: ${id}`);
      expect(theirs).toMatch(/no stored result .* in this conversation/);
      expect(theirs).not.toContain('100000');
    }
  });
});
