/**
 * A capped tool result is stored whole and paged with tool_result_page; the
 * stored copy belongs to its conversation: another conversation (another
 * user's, or an injected model guessing ids) reads nothing of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm } from './fakes/fake-llm.js';
import { API_KEY, OTHER_KEY, startGateway, testConfig } from './support/gateway.js';
import { toolCommandModel, toolResultOf } from './support/tool-turns.js';

describe('tool_result_page is scoped to its conversation', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(toolCommandModel);
    gw = await startGateway(testConfig(fake, {}, { tools: { outputCapBytes: 2048 } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  const toolText = (key: string, conversation: string, text: string) => toolResultOf(gw, fake, { key, conversation, text });

  it('pages in its own conversation and reads as unknown from any other', async () => {
    const long = await toolText(API_KEY, 'owner-conv', 'run: seq 100000 100999');
    const id = /resultId "([^"]+)"/.exec(long)?.[1];
    expect(id).toBeTruthy();
    const mine = await toolText(API_KEY, 'owner-conv', `page: ${id}`);
    expect(mine).toContain('100000');
    expect(mine).toMatch(/bytes 0-200 of \d+/);
    // The same key in another conversation, and another key: nothing.
    for (const [key, conv] of [
      [API_KEY, 'other-conv'],
      [OTHER_KEY, 'thief-conv'],
    ] as const) {
      const theirs = await toolText(key, conv, `page: ${id}`);
      expect(theirs).toMatch(/no stored result .* in this conversation/);
      expect(theirs).not.toContain('100000');
    }
  });
});
