/** The typing indicator the Discord and Telegram deliverers share: when it shows, when it stops. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TurnEvent } from '../kernel/turn-events.js';
import { ReplyBuffer } from '../src/channel/reply-buffer.js';
import { TypingIndicator } from '../src/channel/typing-indicator.js';

describe('TypingIndicator', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const make = (extra: { enabled?: boolean; fence?: () => boolean } = {}) => {
    let sent = 0;
    const t = new TypingIndicator({
      enabled: extra.enabled ?? true,
      send: () => sent++,
      ...(extra.fence ? { fence: extra.fence } : {}),
      everyMs: 1_000,
      idleMs: 5_000,
    });
    return { t, sent: () => sent };
  };
  const push = (t: TypingIndicator, reply: ReplyBuffer, e: TurnEvent) => t.event(e, reply.push(e));

  it('types while thinking, stops when text streams, starts again for a tool call, never after close', () => {
    const { t, sent } = make();
    const reply = new ReplyBuffer();
    t.set(true);
    vi.advanceTimersByTime(2_500);
    expect(sent()).toBe(3);
    push(t, reply, { type: 'text_delta', turnId: 't', delta: 'Hello' } as TurnEvent);
    vi.advanceTimersByTime(3_000);
    expect(sent()).toBe(3);
    push(t, reply, { type: 'tool_start', turnId: 't', toolCallId: 'c1', name: 'shell_exec', args: {} } as TurnEvent);
    expect(sent()).toBe(4);
    t.close();
    t.set(true);
    vi.advanceTimersByTime(10_000);
    expect(sent()).toBe(4);
  });

  it('stops on its own when no event comes for idleMs, and once the lease is gone', () => {
    const idle = make();
    idle.t.set(true);
    vi.advanceTimersByTime(20_000);
    expect(idle.sent()).toBeLessThanOrEqual(6);
    let leased = true;
    const fenced = make({ fence: () => leased });
    fenced.t.set(true);
    leased = false;
    vi.advanceTimersByTime(5_000);
    expect(fenced.sent()).toBe(1);
    const off = make({ enabled: false });
    off.t.set(true);
    expect(off.sent()).toBe(0);
  });
});
