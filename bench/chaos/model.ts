import { randomUUID } from 'node:crypto';
import { type FakeLlm, type FakeScript, lastUserText } from '../../test/fakes/fake-llm.js';

/**
 * The model of the chaos run, by the message's kind (its text's prefix):
 * - `<p>-a…` (approval): a dangerous-tier command that appends the message to the conversation's
 *   effects.log, so an operator must approve it; then the answer.
 * - `<p>-t…` (tool): a caution-tier append that `trusted` autonomy runs without asking.
 * - anything else: the answer at once.
 * The answer is always `echo: <message>`. Tool-call ids are new on every request, as a real model's
 * are: a turn that asks the model again gets a different call (what the journal prevents).
 */
export function chaosModel(fake: FakeLlm, prefix: string, tokenDelayMs: number): void {
  fake.respond((req) => {
    const body = req.body as { messages: Array<{ role: string }> };
    const text = lastUserText(body);
    const last = body.messages[body.messages.length - 1];
    const answer: FakeScript = [tokenDelayMs ? { kind: 'text', text: `echo: ${text}`, tokenDelayMs } : { kind: 'text', text: `echo: ${text}` }];
    if (last?.role === 'tool') return answer;
    const id = `call_${randomUUID().slice(0, 12)}`;
    if (text.startsWith(`${prefix}-a`))
      return [{ kind: 'toolCall', id, name: 'shell_exec', args: { command: `rm -rf scratch && echo ${text} >> effects.log` } }];
    if (text.startsWith(`${prefix}-t`)) return [{ kind: 'toolCall', id, name: 'shell_exec', args: { command: `echo ${text} >> effects.log` } }];
    return answer;
  });
}
