import type { Bus, Subscription } from './port.js';

/** In-process bus for the embedded default. */
export class MemoryBus implements Bus {
  private readonly topics = new Map<string, Set<(e: unknown) => void>>();

  async publish(topic: string, ...events: unknown[]): Promise<void> {
    const subs = this.topics.get(topic);
    if (!subs) return;
    for (const event of events) {
      // Deliver a copy, as the Redis bus would (JSON across the wire).
      const copy = JSON.parse(JSON.stringify(event)) as unknown;
      for (const h of [...subs]) h(copy);
    }
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
  }
}
