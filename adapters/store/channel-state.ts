import type { Db } from '../db/port.js';
import type { ChannelStateRepository } from './ports/channel-state.js';

export type { ChannelStateRepository } from './ports/channel-state.js';

/** Durable key → JSON value per channel, for the little state a channel must keep across restarts. */
export class ChannelStateStore implements ChannelStateRepository {
  constructor(private readonly db: Db) {}

  async get<T = unknown>(channel: string, key: string): Promise<T | undefined> {
    return (await this.db.query<{ value: T }>('select value from channel_state where channel = $1 and key = $2', [channel, key])).rows[0]?.value;
  }

  async set(channel: string, key: string, value: unknown): Promise<void> {
    await this.db.query(
      `insert into channel_state (channel, key, value) values ($1, $2, $3)
       on conflict (channel, key) do update set value = excluded.value, updated_at = now()`,
      [channel, key, JSON.stringify(value)],
    );
  }

  async delete(channel: string, key: string): Promise<void> {
    await this.db.query('delete from channel_state where channel = $1 and key = $2', [channel, key]);
  }
}
