/** Durable key → JSON value per channel, for the little state a channel must keep across restarts. */
export interface ChannelStateRepository {
  /** The value as it was set (a JSON round trip), or undefined. */
  get<T = unknown>(channel: string, key: string): Promise<T | undefined>;
  /** Sets or replaces the value. */
  set(channel: string, key: string, value: unknown): Promise<void>;
  /** Removes it; nothing happens when there is none. */
  delete(channel: string, key: string): Promise<void>;
}
