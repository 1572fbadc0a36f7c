/** The shared reply buffer: what a turn has said so far, as every deliverer reads it. */
import { describe, expect, it } from 'vitest';
import type { ApprovalInfo, TurnEvent } from '../kernel/turn-events.js';
import { callStatus, ReplyBuffer } from '../src/channel/reply-buffer.js';

type Ev = TurnEvent extends infer E ? (E extends TurnEvent ? Omit<E, 'turnId'> : never) : never;
const feed = (b: ReplyBuffer, events: Ev[]) => events.flatMap((e) => b.push({ ...e, turnId: 't1' } as TurnEvent));
const approval: ApprovalInfo = {
  code: 'K7Q4P',
  tool: 'shell_exec',
  tier: 'caution',
  expiresAt: '2030-01-01T00:00:00.000Z',
  args: { command: 'echo hi >> out.txt' },
  reasons: [],
};
const fmt = { notice: (t: string) => `_${t}_`, error: (m: string) => `! ${m}` };
const usage = { input: 1, output: 1, totalTokens: 2, cost: 0 };

describe('reply buffer', () => {
  it('adds up text deltas', () => {
    const b = new ReplyBuffer();
    const changes = feed(b, [
      { type: 'text_delta', delta: 'Hello' },
      { type: 'text_delta', delta: ', world' },
      { type: 'text_delta', delta: '' },
    ]);
    expect(b.text).toBe('Hello, world');
    expect(changes.map((c) => c.kind)).toEqual(['text', 'text']);
  });

  it('a reset withdraws the current message only, back to the last boundary', () => {
    const b = new ReplyBuffer();
    feed(b, [
      { type: 'text_delta', delta: 'Let me check.' },
      { type: 'tool_start', toolCallId: 'c1', name: 'shell_exec', args: {} },
      { type: 'tool_end', toolCallId: 'c1', name: 'shell_exec', isError: false },
      { type: 'text_delta', delta: '\n\nIt says ha' },
      { type: 'reset', reason: 'provider error' },
    ]);
    expect(b.text).toBe('Let me check.');
    feed(b, [{ type: 'text_delta', delta: '\n\nIt says hello.' }]);
    expect(b.text).toBe('Let me check.\n\nIt says hello.');
    // A reset right after a boundary has nothing of the new message to withdraw.
    feed(b, [
      { type: 'notice', text: 'answered by the fallback model' },
      { type: 'reset', reason: 'again' },
    ]);
    expect(b.text).toBe('Let me check.\n\nIt says hello.');
  });

  it('keeps notices and errors where they were said, in the platform markup', () => {
    const b = new ReplyBuffer();
    const changes = feed(b, [
      { type: 'text_delta', delta: 'First part.' },
      { type: 'notice', text: 'switched to the fallback model' },
      { type: 'text_delta', delta: 'Second part.' },
      { type: 'error', message: 'out of time', code: 'timeout' },
    ]);
    expect(b.text).toBe('First part.Second part.');
    expect(b.compose(fmt)).toBe('First part.\n\n_switched to the fallback model_\n\nSecond part.\n\n! out of time');
    expect(b.notices).toEqual(['switched to the fallback model']);
    expect(b.errors).toEqual([{ message: 'out of time', code: 'timeout' }]);
    expect(changes.filter((c) => c.kind === 'notice')).toEqual([{ kind: 'notice', text: 'switched to the fallback model' }]);
  });

  it('tool calls: running, done, failed; the running one is the status', () => {
    const b = new ReplyBuffer();
    feed(b, [{ type: 'tool_start', toolCallId: 'c1', name: 'web_fetch', args: {} }]);
    expect(b.running?.name).toBe('web_fetch');
    const changes = feed(b, [
      { type: 'tool_end', toolCallId: 'c1', name: 'web_fetch', isError: false },
      { type: 'tool_start', toolCallId: 'c2', name: 'shell_exec', args: {} },
      { type: 'tool_end', toolCallId: 'c2', name: 'shell_exec', isError: true },
      { type: 'text_delta', delta: 'It failed.' },
    ]);
    expect(b.running).toBeUndefined();
    expect(b.calls.map((c) => [c.id, c.state])).toEqual([
      ['c1', 'done'],
      ['c2', 'failed'],
    ]);
    // The failure is said once it is known not to be a parked call: when something else is said.
    expect(changes.flatMap((c) => (c.kind === 'tool' ? [`${c.call.id} ${callStatus(c.call)}`] : c.kind))).toEqual([
      'c1 done',
      'c2 started',
      'c2 failed',
      'text',
    ]);
  });

  it('approvals: structured, once per code; a parked call is waiting, never failed', () => {
    const b = new ReplyBuffer();
    const changes = feed(b, [
      { type: 'tool_start', toolCallId: 'c1', name: 'shell_exec', args: approval.args },
      { type: 'tool_end', toolCallId: 'c1', name: 'shell_exec', isError: false, pending: { code: 'K7Q4P' } },
      { type: 'approval_requested', approval },
      { type: 'approval_requested', approval },
      { type: 'done', text: '', finishReason: 'approval_pending', usage, approvals: [approval] },
    ]);
    expect(b.approvals).toEqual([approval]);
    expect(b.parked).toBe(true);
    expect(b.waiting.map(callStatus)).toEqual(['waiting for approval (code K7Q4P)']);
    expect(changes.filter((c) => c.kind === 'approval')).toHaveLength(1);
    expect(changes.some((c) => c.kind === 'tool' && c.call.state === 'failed')).toBe(false);
    expect(b.text).toBe('');
  });

  it('a turn without `pending` yet: a failed tool_end followed by its approval request is waiting', () => {
    const b = new ReplyBuffer();
    const changes = feed(b, [
      { type: 'text_delta', delta: 'Running it.' },
      { type: 'tool_start', toolCallId: 'c1', name: 'shell_exec', args: approval.args },
      { type: 'tool_end', toolCallId: 'c1', name: 'shell_exec', isError: true },
      { type: 'approval_requested', approval },
      { type: 'done', text: 'Running it.', finishReason: 'approval_pending', usage, approvals: [approval] },
    ]);
    const told = changes.flatMap((c) => (c.kind === 'tool' ? [callStatus(c.call)] : []));
    expect(told).toEqual(['started', 'waiting for approval (code K7Q4P)']);
    expect(b.calls[0]).toMatchObject({ state: 'waiting', code: 'K7Q4P' });
  });

  it('a new attempt of the turn starts over; a done alone carries the whole text', () => {
    const b = new ReplyBuffer();
    feed(b, [
      { type: 'turn_start', conversationId: 'c', inboxIds: [1], attempt: 1 },
      { type: 'text_delta', delta: 'half an ans' },
    ]);
    feed(b, [{ type: 'turn_start', conversationId: 'c', inboxIds: [1], attempt: 2 }]);
    expect(b.text).toBe('');
    expect(b.attempt).toBe(2);
    const replayed = new ReplyBuffer();
    const changes = feed(replayed, [{ type: 'done', text: 'the stored answer', finishReason: 'stop', usage }]);
    expect(replayed.text).toBe('the stored answer');
    expect(changes.map((c) => c.kind)).toEqual(['text', 'done']);
    expect(replayed.finishReason).toBe('stop');
  });
});
