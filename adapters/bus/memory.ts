import { type Bus, HISTORY_LIMIT, type Subscription } from './port.js';

/** Events a topic keeps for history(), and how many topics keep them (the least recently published go first). */
const REPLAY_PER_TOPIC = 300;
const REPLAY_TOPICS = 200;

/** In-process bus for the embedded default. */
export class MemoryBus implements Bus {
  private readonly topics = new Map<string, Set<(e: unknown) => void>>();
  /** A small replay buffer per topic (the Redis bus has the stream's entries), as JSON. */
  private readonly recent = new Map<string, string[]>();

  async publish(topic: string, ...events: unknown[]): Promise<void> {
    const wire = events.map((e) => JSON.stringify(e));
    this.remember(topic, wire);
    const subs = this.topics.get(topic);
    if (!subs) return;
    for (const raw of wire) {
      // Deliver a copy, as the Redis bus would (JSON across the wire).
      const copy = JSON.parse(raw) as unknown;
      for (const h of [...subs]) h(copy);
    }
  }

  private remember(topic: string, wire: string[]): void {
    let buf = this.recent.get(topic);
    if (buf)
      this.recent.delete(topic); // re-inserted: most recently published last
    else buf = [];
    buf.push(...wire);
    if (buf.length > REPLAY_PER_TOPIC) buf.splice(0, buf.length - REPLAY_PER_TOPIC);
    this.recent.set(topic, buf);
    if (this.recent.size > REPLAY_TOPICS) this.recent.delete(this.recent.keys().next().value!);
  }

  async history(topic: string, limit = HISTORY_LIMIT): Promise<never[]> {
    const buf = this.recent.get(topic) ?? [];
    return buf.slice(-limit).map((raw) => JSON.parse(raw) as never);
  }

  async subscribe(topic: string, handler: (e: unknown) => void): Promise<Subscription> {
    let subs = this.topics.get(topic);
    if (!subs) this.topics.set(topic, (subs = new Set()));
    subs.add(handler);
    return {
      close: () => {
        subs!.delete(handler);
        if (subs!.size === 0) this.topics.delete(topic);
      },
    };
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.topics.clear();
    this.recent.clear();
  }
}
