import type { CooldownState, CooldownStore } from './port.js';

export class MemoryCooldowns implements CooldownStore {
  private readonly state = new Map<string, CooldownState>();

  async get(slots: string[]): Promise<Map<string, CooldownState>> {
    return new Map(slots.map((s) => [s, { ...(this.state.get(s) ?? { until: 0, strikes: 0 }) }]));
  }

  async fail(slot: string, ms: (strikes: number) => number, reason: string): Promise<CooldownState> {
    const strikes = (this.state.get(slot)?.strikes ?? 0) + 1;
    const next = { until: Date.now() + ms(strikes), strikes, reason };
    this.state.set(slot, next);
    return { ...next };
  }

  async clear(slot: string): Promise<void> {
    this.state.delete(slot);
  }

  async close(): Promise<void> {}
}
