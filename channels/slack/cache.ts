/** A bounded map whose entries expire: the oldest entry goes first when it is full. */
export class TtlCache<V> {
  private readonly map = new Map<string, { v: V; until: number }>();

  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const e = this.map.get(key);
    if (!e) return undefined;
    if (e.until <= Date.now()) {
      this.map.delete(key);
      return undefined;
    }
    return e.v;
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, v: V, ttlMs: number): void {
    this.map.delete(key);
    this.map.set(key, { v, until: Date.now() + ttlMs });
    while (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }

  delete(key: string): void {
    this.map.delete(key);
  }
}
