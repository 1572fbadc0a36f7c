import { type Bus, type Topic, topic } from '../adapters/bus/port.js';
import type { TurnEvent } from '../kernel/turn-events.js';

/**
 * Publishes a turn's events to the bus in order. Events that pile up while a
 * publish is in flight go out together in the next write, with consecutive text
 * deltas merged, so a fast model costs a few bus writes per turn rather than one
 * per token, without delaying the first token.
 */
export class EventPublisher {
  private queue: TurnEvent[] = [];
  private flushing: Promise<void> | null = null;
  private failed?: unknown;

  constructor(
    private readonly bus: Bus,
    private readonly topic: Topic<TurnEvent>,
    /** Asked at each push and after each write: false drops the events (the drain's lease is lost: src/turn/lease-guard.ts). */
    private readonly mayPublish: () => boolean = () => true,
  ) {}

  push(e: TurnEvent): void {
    if (!this.mayPublish()) return;
    const last = this.queue[this.queue.length - 1];
    if (e.type === 'text_delta' && last?.type === 'text_delta' && last.turnId === e.turnId) {
      this.queue[this.queue.length - 1] = { ...last, delta: last.delta + e.delta };
    } else this.queue.push(e);
    if (!this.flushing) this.flushing = this.flush();
  }

  private async flush(): Promise<void> {
    while (this.queue.length) {
      // Everything queued so far goes out in one write.
      const batch = this.queue.splice(0);
      try {
        await this.bus.publish(this.topic, ...batch);
      } catch (err) {
        // Live events are best effort: the turn's outcome is in the store, and
        // waiting requests fall back to reading it from there.
        this.failed = err;
      }
      // Asked again after each write: what was queued meanwhile (the process may have been frozen) is dropped once it says no.
      if (!this.mayPublish()) this.queue.length = 0;
    }
    this.flushing = null;
  }

  /** Resolves once every pushed event has been published (or given up on). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  get lastError(): unknown {
    return this.failed;
  }
}

export function conversationTopic(conversationKey: string): Topic<TurnEvent> {
  return topic(`conv:${conversationKey}`);
}
