import { randomUUID } from 'node:crypto';
import { type Bus, type Topic, topic } from '../adapters/bus/port.js';
import type { BusTurnEvent, TurnEvent } from '../kernel/turn-events.js';

/**
 * How long a turn's opening event (turn_start) may wait for the next one (the model's first
 * delta, a tool call) to go out in the same bus write: on Redis one XADD, and one wake of the
 * subscriber's reader, less per turn. Nothing waits on turn_start alone (a follower shows text).
 */
const START_HOLD_MS = 25;

/**
 * Publishes a turn's events to the bus in order. Events that pile up while a
 * publish is in flight go out together in the next write, with consecutive text
 * deltas merged, so a fast model costs a few bus writes per turn rather than one
 * per token, without delaying the first token.
 *
 * Each event leaves numbered (kernel/turn-events.ts TurnEventOrder): its turn's attempt, a
 * sequence number from 1 per turn and attempt, assigned as it is written (after merging, so the
 * numbers have no holes), and this publisher's run id. Subscribers drop a number they have seen:
 * the Redis client resends a write whose answer it lost in a reconnect.
 */
export class EventPublisher {
  private queue: TurnEvent[] = [];
  private flushing: Promise<void> | null = null;
  /** Set while a turn_start waits for company (START_HOLD_MS). */
  private held?: NodeJS.Timeout;
  private failed?: unknown;
  /** This publisher's run: a turn resumed by another drain numbers its events anew under another run. */
  private readonly run = randomUUID().slice(0, 8);
  /** Per turn id: its attempt (from turn_start) and the last seq given. */
  private readonly order = new Map<string, { attempt: number; seq: number }>();

  constructor(
    private readonly bus: Bus,
    private readonly topic: Topic<BusTurnEvent>,
    /** Asked at each push and after each write: false drops the events (the drain's lease is lost: src/turn/lease-guard.ts). */
    private readonly mayPublish: () => boolean = () => true,
  ) {}

  private numbered(e: TurnEvent): BusTurnEvent {
    let o = this.order.get(e.turnId);
    if (e.type === 'turn_start' && (!o || o.attempt !== e.attempt)) this.order.set(e.turnId, (o = { attempt: e.attempt, seq: 0 }));
    if (!o) this.order.set(e.turnId, (o = { attempt: 1, seq: 0 }));
    o.seq++;
    return { ...e, attempt: o.attempt, seq: o.seq, run: this.run };
  }

  push(e: TurnEvent): void {
    if (!this.mayPublish()) return;
    const last = this.queue[this.queue.length - 1];
    if (e.type === 'text_delta' && last?.type === 'text_delta' && last.turnId === e.turnId) {
      this.queue[this.queue.length - 1] = { ...last, delta: last.delta + e.delta };
    } else this.queue.push(e);
    if (this.flushing) return;
    if (e.type === 'turn_start' && this.queue.length === 1) {
      this.held ??= setTimeout(() => this.kick(), START_HOLD_MS);
      this.held.unref?.();
      return;
    }
    this.kick();
  }

  /** Starts writing what is queued (unless a write is in flight: it takes the rest after it). */
  private kick(): void {
    if (this.held) {
      clearTimeout(this.held);
      this.held = undefined;
    }
    if (!this.flushing && this.queue.length) this.flushing = this.flush();
  }

  private async flush(): Promise<void> {
    while (this.queue.length) {
      // A process frozen with events queued asks again before it writes them (its lease may be gone).
      if (!this.mayPublish()) {
        this.queue.length = 0;
        break;
      }
      // Everything queued so far goes out in one write.
      const batch = this.queue.splice(0).map((e) => this.numbered(e));
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
    this.kick();
    while (this.flushing) await this.flushing;
  }

  get lastError(): unknown {
    return this.failed;
  }
}

export function conversationTopic(conversationKey: string): Topic<BusTurnEvent> {
  return topic(`conv:${conversationKey}`);
}

/** Whether a topic is a conversation's turn events (what a process running both roles may deliver in process: app/infra.ts). */
export function isConversationTopic(name: string): boolean {
  return name.startsWith('conv:');
}
