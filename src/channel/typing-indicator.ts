import type { TurnEvent } from '../../kernel/turn-events.js';
import type { ReplyChange } from './reply-buffer.js';

export interface TypingOptions {
  /** Off: never shown (the channel's `typing: false`, or a turn with nowhere to show it). */
  enabled: boolean;
  /** Shows the indicator once (the platform's own expires after some seconds). */
  send: () => void;
  /** The attempt's lease (DeliverContext.fence): once false, nothing more is sent. */
  fence?: () => boolean;
  /** How often it is sent again while thinking (under the platform's expiry). */
  everyMs: number;
  /** No turn event for this long: stop (a wedged turn does not type for ever). */
  idleMs: number;
}

/**
 * "typing…" while the agent thinks: on at the start, off while text streams, on again for a
 * tool call or a withdrawn answer, off for good at close. The deliverers of platforms with a
 * typing indicator (Discord, Telegram) share it; each gives only how to send it.
 */
export class TypingIndicator {
  private thinking = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private lastEventAt = Date.now();

  constructor(private readonly opts: TypingOptions) {}

  /** A turn event arrived, with what it changed in the reply buffer. */
  event(e: TurnEvent, changes: readonly ReplyChange[]): void {
    this.lastEventAt = Date.now();
    for (const c of changes) {
      if (c.kind === 'text' && e.type === 'text_delta' && e.delta.trim()) this.set(false);
      if (c.kind === 'reset' || (c.kind === 'tool' && c.call.state === 'running')) this.set(true);
    }
  }

  set(on: boolean): void {
    if (!this.opts.enabled || this.closed || on === this.thinking) return;
    this.thinking = on;
    if (!on) {
      this.clear();
      return;
    }
    this.send();
    this.timer = setInterval(() => {
      if (!this.thinking || this.closed || Date.now() - this.lastEventAt > this.opts.idleMs) this.clear();
      else this.send();
    }, this.opts.everyMs);
    this.timer.unref();
  }

  close(): void {
    this.closed = true;
    this.clear();
  }

  private send(): void {
    if (this.opts.fence && !this.opts.fence()) this.clear();
    else this.opts.send();
  }

  private clear(): void {
    this.thinking = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
