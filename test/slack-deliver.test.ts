/**
 * The Slack deliverer on its own, against the fake Slack Web API: retried
 * attempts edit what an earlier attempt posted, long replies are split, the
 * status line while tools run, and the fallback when native streaming is not
 * available.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChannelStateStore } from '../adapters/store/channel-state.js';
import type { DeliveryRecord, DeliveryStore } from '../adapters/store/deliveries.js';
import { parseSlackConfig } from '../channels/slack/config.js';
import { SlackDeliverer } from '../channels/slack/deliver.js';
import type { SlackReplyTo } from '../channels/slack/reply-to.js';
import type { TurnEvent } from '../kernel/turn-events.js';
import type { DeliverContext, TurnTarget } from '../src/channel/index.js';
import { createLogger } from '../src/log.js';
import { BOT, BOT_TOKEN, FakeSlack } from './fakes/slack-api.js';
import { eventually } from './support/gateway.js';

class MemoryDeliveries {
  rows: DeliveryRecord[] = [];
  async get(turnId: string, channel: string, target: string) {
    return this.rows.find((r) => r.turnId === turnId && r.channel === channel && r.target === target);
  }
  async forTurn(turnId: string) {
    return this.rows.filter((r) => r.turnId === turnId);
  }
  async record(turnId: string, channel: string, target: string, f: { platformMessageId?: string | null; state: string; body?: string | null }) {
    let r = await this.get(turnId, channel, target);
    if (!r) {
      r = { id: this.rows.length + 1, turnId: turnId, channel, target, platformMessageId: null, state: f.state, body: null, updatedAt: new Date() };
      this.rows.push(r);
    }
    r.platformMessageId = f.platformMessageId ?? r.platformMessageId;
    r.state = f.state;
    r.body = f.body ?? r.body;
    return r;
  }
}

describe('slack deliverer', () => {
  let slack: FakeSlack;
  let deliveries: MemoryDeliveries;
  let ctx: DeliverContext;
  let n = 0;
  const deliverer = (extra: Record<string, unknown> = {}) => {
    const d = new SlackDeliverer(
      parseSlackConfig({ apiUrl: slack.apiUrl, updateIntervalMs: 200, streamIntervalMs: 50, ...extra }, { SLACK_BOT_TOKEN: BOT_TOKEN }),
    );
    return d;
  };
  const target = (channel: string, thread: string | undefined, turnId: string, attempt = 1): TurnTarget<SlackReplyTo> => ({
    turnId,
    attempt,
    conversation: { id: 'c1', key: `slack/${BOT.team}/${channel}/${thread ?? '-'}`, channel: 'slack', agent: 'default' },
    replyTo: { channel, ...(thread ? { thread_ts: thread } : {}), ts: thread ?? '1.1', team: BOT.team, user: 'UALICE', dm: channel.startsWith('D') },
  });
  const run = async (d: SlackDeliverer, t: TurnTarget<SlackReplyTo>, events: Array<Record<string, unknown> | number | (() => void)>, close = true) => {
    const del = d.open(t, ctx);
    for (const e of events) {
      if (typeof e === 'number') await new Promise((r) => setTimeout(r, e));
      else if (typeof e === 'function') e();
      else del.event({ ...e, turnId: t.turnId } as TurnEvent);
    }
    if (close) await del.close();
    return del;
  };

  beforeAll(async () => {
    slack = new FakeSlack();
    await slack.start();
  });
  beforeEach(() => {
    deliveries = new MemoryDeliveries();
    ctx = { deliveries: deliveries as unknown as DeliveryStore, state: {} as ChannelStateStore, log: createLogger('silent') };
    slack.failing.clear();
    n++;
  });
  afterAll(async () => {
    await slack?.close();
  });

  it('a retried attempt edits the message the first attempt left streaming, instead of posting again', async () => {
    const d = deliverer();
    const thread = `${n}.000100`;
    const ch = `C${n}`;
    await run(d, target(ch, thread, `t${n}`), [{ type: 'text_delta', delta: 'first attempt, half' }, 200], false); // the worker died here
    // The first post may land after the pause on a busy machine: wait for it (and its row, written
    // just after Slack answered, which the retry reads), then check there is one.
    await eventually(async () => (slack.botMessages(ch, thread).length > 0 && deliveries.rows.length > 0 ? true : null));
    expect(slack.botMessages(ch, thread)).toHaveLength(1);
    expect(slack.botMessages(ch, thread)[0]!.streaming).toBe(true);
    await run(d, target(ch, thread, `t${n}`, 2), [{ type: 'text_delta', delta: 'second attempt, whole answer' }]);
    const msgs = slack.botMessages(ch, thread);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]!.text).toBe('second attempt, whole answer');
    expect(msgs[0]!.streaming).toBe(false);
    expect(deliveries.rows.map((r) => [r.target, r.state])).toEqual([[`msg:${ch}:0`, 'done']]);
  });

  it('without a thread (post and edit): a retried attempt edits the message the first posted; a resumed turn answers below the request', async () => {
    const ch = `D${n}`;
    await run(deliverer(), target(ch, undefined, `t${n}`), [{ type: 'text_delta', delta: 'first attempt, half' }, 300], false); // the worker died here
    await eventually(async () => (slack.botMessages(ch).length > 0 ? true : null));
    await run(deliverer(), target(ch, undefined, `t${n}`, 2), [
      { type: 'text_delta', delta: 'Running it.' },
      { type: 'tool_start', toolCallId: 'k1', name: 'shell_exec', args: {} },
      { type: 'tool_end', toolCallId: 'k1', name: 'shell_exec', isError: false, pending: { code: 'K7Q4P' } },
      {
        type: 'approval_requested',
        approval: { code: 'K7Q4P', tool: 'shell_exec', tier: 'caution', expiresAt: new Date().toISOString(), args: { command: 'ls' }, reasons: [] },
      },
    ]);
    let msgs = slack.botMessages(ch);
    expect(msgs).toHaveLength(2);
    expect(msgs[0]!.text).toBe('Running it.\n\n_:hourglass_flowing_sand: `shell_exec` waiting for approval (code K7Q4P)_');
    expect(JSON.stringify(msgs[1]!.blocks)).toContain('sb_approve');
    expect(deliveries.rows.map((r) => [r.target, r.state])).toEqual([
      [`msg:${ch}:0`, 'parked'],
      ['approval:K7Q4P', 'posted'],
    ]);
    // The decision resumed the turn (attempt 3): a new message under the request; the request is not asked again.
    await run(deliverer(), target(ch, undefined, `t${n}`, 3), [{ type: 'text_delta', delta: 'Done: exit code 0.' }]);
    msgs = slack.botMessages(ch);
    expect(msgs.map((m) => m.text.split('\n')[0])).toEqual(['Running it.', expect.stringContaining('Approval needed'), 'Done: exit code 0.']);
    expect(deliveries.rows.find((r) => r.target === `msg:${ch}:1`)?.state).toBe('done');
  });

  it('splits a long reply into several messages in the thread', async () => {
    const d = deliverer({ maxMessageChars: 300 });
    const thread = `${n}.000100`;
    const ch = `C${n}`;
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`);
    const events: Array<Record<string, unknown> | number> = [];
    for (let i = 0; i < words.length; i += 20) events.push({ type: 'text_delta', delta: words.slice(i, i + 20).join(' ') + ' ' }, 20);
    await run(d, target(ch, thread, `t${n}`), events);
    const msgs = slack.botMessages(ch, thread);
    expect(msgs.length).toBeGreaterThanOrEqual(3);
    expect(msgs.every((m) => !m.streaming && m.text.length <= 300)).toBe(true);
    expect(
      msgs
        .map((m) => m.text)
        .join(' ')
        .split(/\s+/)
        .filter(Boolean),
    ).toEqual(words);
  });

  it('shows a status line while a tool runs (edit mode) and task updates (native)', async () => {
    const ch = `D${n}`;
    const d = deliverer();
    const del = await run(
      d,
      target(ch, undefined, `t${n}`),
      [{ type: 'text_delta', delta: 'Let me check.' }, { type: 'tool_start', toolCallId: 'k1', name: 'shell_exec', args: {} }, 400],
      false,
    );
    const m = slack.botMessages(ch)[0]!;
    expect(m.text).toMatch(/Let me check\.\n\n_:gear: Running `shell_exec`…_/);
    del.event({ type: 'tool_end', turnId: `t${n}`, toolCallId: 'k1', name: 'shell_exec', isError: false });
    del.event({ type: 'text_delta', turnId: `t${n}`, delta: ' Done.' });
    await del.close();
    expect(slack.messages.get(m.ts)!.text).toBe('Let me check. Done.');

    const thread = `${n}.000200`;
    await run(deliverer(), target('C9', thread, `t${n}b`), [
      { type: 'tool_start', toolCallId: 'k2', name: 'web_fetch', args: {} },
      100,
      { type: 'tool_end', toolCallId: 'k2', name: 'web_fetch', isError: false },
      { type: 'text_delta', delta: 'Fetched.' },
    ]);
    const native = slack.botMessages('C9', thread)[0]!;
    expect(native.tasks.map((t) => [t.id, t.status])).toEqual([
      ['k2', 'in_progress'],
      ['k2', 'complete'],
    ]);
    expect(native.text).toBe('Fetched.');
  });

  it('a streamed reply that cannot go on streaming (a reset, a refused append) is edited in place, never posted twice', async () => {
    const thread = `${n}.000100`;
    const ch = `C${n}`;
    // A reset withdraws streamed text: the stream stops and the same message is edited.
    await run(deliverer(), target(ch, thread, `t${n}`), [
      { type: 'text_delta', delta: 'a wrong start' },
      200,
      { type: 'reset', reason: 'provider error' },
      { type: 'text_delta', delta: 'the **right** answer' },
    ]);
    let msgs = slack.botMessages(ch, thread);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]!.history[0]).toBe('a wrong start'); // it was streamed, then withdrawn
    expect(msgs[0]).toMatchObject({ text: 'the *right* answer', streaming: false });
    expect(deliveries.rows.map((r) => [r.target, r.state])).toEqual([[`msg:${ch}:0`, 'done']]);
    // Slack refuses an append mid-stream: the rest of the reply is edited into the same message.
    const thread2 = `${n}.000200`;
    await run(deliverer(), target(ch, thread2, `t${n}b`), [
      { type: 'text_delta', delta: 'streamed part,' },
      200,
      () => slack.failing.set('chat.appendStream', 'internal_error'),
      { type: 'text_delta', delta: ' edited part' },
      300,
    ]);
    msgs = slack.botMessages(ch, thread2);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]).toMatchObject({ text: 'streamed part, edited part', streaming: false });
  });

  it("all streams of a workspace share one chat.appendStream budget: Slack's limit is never hit, every reply arrives whole", async () => {
    const perMinute = 30;
    slack.appendStreamPerMinute = perMinute; // the fake answers 429 past this, counted per workspace (token)
    const before = slack.rateLimited;
    const appendsBefore = slack.callsOf('chat.appendStream').length;
    try {
      const d = deliverer({ appendStreamPerMinute: perMinute, streamIntervalMs: 50 });
      const words = Array.from({ length: 60 }, (_, i) => `s${i}`);
      const streams = [1, 2, 3].map((k) => ({ ch: `C${n}x${k}`, thread: `${n}.00${k}00`, turn: `t${n}s${k}` }));
      await Promise.all(
        streams.map((st) => {
          const events: Array<Record<string, unknown> | number> = [];
          for (const w of words) events.push({ type: 'text_delta', delta: `${w} ` }, 40);
          return run(d, target(st.ch, st.thread, st.turn), events);
        }),
      );
      expect(slack.rateLimited - before).toBe(0);
      const appends = slack.callsOf('chat.appendStream').length - appendsBefore;
      expect(appends).toBeGreaterThan(0);
      expect(appends).toBeLessThanOrEqual(perMinute);
      for (const st of streams) {
        const msgs = slack.botMessages(st.ch, st.thread);
        expect(msgs).toHaveLength(1);
        expect(msgs[0]).toMatchObject({ streaming: false, text: `${words.join(' ')} ` });
      }
    } finally {
      slack.appendStreamPerMinute = undefined;
    }
  });

  it('every chat.appendStream carries markdown_text, task updates included (the fake refuses one without)', async () => {
    const thread = `${n}.000100`;
    const ch = `C${n}`;
    await run(deliverer(), target(ch, thread, `t${n}`), [
      { type: 'text_delta', delta: 'Looking.' },
      100,
      { type: 'tool_start', toolCallId: 'k3', name: 'web_fetch', args: {} },
      100,
      { type: 'tool_end', toolCallId: 'k3', name: 'web_fetch', isError: false },
      100,
      { type: 'text_delta', delta: ' Found it.' },
    ]);
    const m = slack.botMessages(ch, thread)[0]!;
    const appends = slack.callsOf('chat.appendStream').filter((c) => c.args.ts === m.ts);
    expect(appends.some((c) => Array.isArray(c.args.chunks))).toBe(true);
    expect(appends.every((c) => typeof c.args.markdown_text === 'string')).toBe(true);
    expect(m.tasks.map((t) => [t.id, t.status])).toEqual([
      ['k3', 'in_progress'],
      ['k3', 'complete'],
    ]);
    expect(m.text).toBe('Looking. Found it.');
  });

  it('falls back to posting and editing when native streaming is not available', async () => {
    slack.failing.set('chat.startStream', 'unknown_method');
    const thread = `${n}.000100`;
    const ch = `C${n}`;
    await run(deliverer(), target(ch, thread, `t${n}`), [{ type: 'text_delta', delta: 'plain **edit**' }, 50, { type: 'text_delta', delta: ' mode' }]);
    const msgs = slack.botMessages(ch, thread);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]!.text).toBe('plain *edit* mode');
  });
});
