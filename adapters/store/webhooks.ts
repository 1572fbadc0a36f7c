import type { Db } from '../db/port.js';
import type { SubscriberRow, WebhookRepository } from './ports/webhooks.js';

export type { SubscriberRow, WebhookRepository } from './ports/webhooks.js';

export class WebhookStore implements WebhookRepository {
  constructor(private readonly db: Db) {}

  async subscribers(): Promise<SubscriberRow[]> {
    return (await this.db.query<SubscriberRow>('select id, url, secret_env, events from webhook_subscribers order by created_at')).rows;
  }

  async addSubscriber(s: SubscriberRow): Promise<void> {
    await this.db.query(
      `insert into webhook_subscribers (id, url, secret_env, events) values ($1, $2, $3, $4)
       on conflict (id) do update set url = excluded.url, secret_env = excluded.secret_env, events = excluded.events`,
      [s.id, s.url, s.secret_env, JSON.stringify(s.events)],
    );
  }

  async deadLetter(subscriber: string, event: unknown, error: string, attempts: number): Promise<void> {
    await this.db.query('insert into webhook_dead_letters (subscriber, event, error, attempts) values ($1, $2, $3, $4)', [
      subscriber,
      JSON.stringify(event),
      error,
      attempts,
    ]);
  }

  async deadLetters(limit = 100): Promise<Array<{ id: number; subscriber: string; event: unknown; error: string; attempts: number; created_at: Date }>> {
    return (
      await this.db.query<{ id: number; subscriber: string; event: unknown; error: string; attempts: number; created_at: Date }>(
        'select * from webhook_dead_letters order by id desc limit $1',
        [limit],
      )
    ).rows;
  }
}
