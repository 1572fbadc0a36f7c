import { MemoryBus } from './memory.js';
import type { Bus, Subscription, Topic } from './port.js';

/**
 * The bus of a process that runs both roles on Redis (`switchboard start`): a turn's events
 * go to this process's own subscribers (the waiting HTTP request, a console stream) in
 * process, as JSON copies, and not through Redis, when a subscriber of the topic is here.
 * A topic with no subscriber here, and every topic outside `localTopics` (the control
 * topic every worker listens to), still goes through Redis; this process's subscribers
 * also subscribe there, so a turn run by another worker process reaches them.
 *
 * What a follower in another process misses of a turn delivered here (a console stream or a
 * retried request on another ingress) it reads from the store when the turn ends: live
 * events are best effort (src/event-publisher.ts) and the store is the truth.
 */
export class LocalFirstBus implements Bus {
  private readonly local = new MemoryBus();
  /** Subscribers here, per topic. */
  private readonly here = new Map<string, number>();

  constructor(
    private readonly remote: Bus,
    /** Which topics may be delivered in process (the per-conversation turn events). */
    private readonly localTopics: (topic: string) => boolean,
  ) {}

  async publish(topic: string, ...events: unknown[]): Promise<void> {
    if (events.length === 0) return;
    if (this.localTopics(topic) && (this.here.get(topic) ?? 0) > 0) return this.local.publish(topic, ...events);
    return this.remote.publish(topic, ...events);
  }

  async subscribe(topic: string, handler: (e: unknown) => void): Promise<Subscription> {
    const subs: Subscription[] = [];
    if (this.localTopics(topic)) {
      subs.push(await this.local.subscribe(topic, handler));
      this.here.set(topic, (this.here.get(topic) ?? 0) + 1);
    }
    try {
      subs.push(await this.remote.subscribe(topic, handler));
    } catch (err) {
      this.unsubscribe(topic, subs);
      throw err;
    }
    let closed = false;
    return {
      close: () => {
        if (closed) return;
        closed = true;
        this.unsubscribe(topic, subs);
      },
    };
  }

  private unsubscribe(topic: string, subs: Subscription[]): void {
    for (const s of subs) s.close();
    if (!this.localTopics(topic)) return;
    const n = (this.here.get(topic) ?? 1) - 1;
    if (n > 0) this.here.set(topic, n);
    else this.here.delete(topic);
  }

  /** What Redis holds of the topic and what was delivered here; followers match events by turn and number, not by position. */
  async history(topic: string, limit?: number): Promise<never[]> {
    const t = topic as Topic<never>;
    const mine = this.localTopics(topic) ? await this.local.history(t, limit) : [];
    try {
      const theirs = await this.remote.history(t, limit);
      return mine.length ? [...theirs, ...mine] : theirs;
    } catch (err) {
      if (mine.length) return mine;
      throw err;
    }
  }

  ping(): Promise<void> {
    return this.remote.ping();
  }

  async close(): Promise<void> {
    await this.local.close();
    await this.remote.close();
  }
}
