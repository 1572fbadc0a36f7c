/**
 * MessageSids seen recently, bounded (oldest forgotten first). A replayed or
 * retried webhook is answered with empty TwiML and not processed again, which
 * covers what the inbox's unique key cannot: keywords and approval answers,
 * which never reach the inbox. Per process; the inbox dedupes across processes.
 */
export class SeenIds {
  private readonly ids = new Map<string, number>();

  constructor(
    private readonly max = 10_000,
    private readonly ttlMs = 24 * 3_600_000,
  ) {}

  /** Marks id as seen; false when it already was (and has not expired). */
  claim(id: string, now = Date.now()): boolean {
    const at = this.ids.get(id);
    if (at !== undefined && now - at < this.ttlMs) return false;
    this.ids.delete(id);
    this.ids.set(id, now);
    while (this.ids.size > this.max) this.ids.delete(this.ids.keys().next().value!);
    return true;
  }

  /** Forgets id (its processing failed: Twilio's retry must be processed). */
  release(id: string): void {
    this.ids.delete(id);
  }
}
