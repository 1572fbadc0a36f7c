import type { Db } from '../db/port.js';
import type { WebhookDeadLetter, WebhookRepository, WebhookSubscriber } from './ports/webhooks.js';

export type { WebhookDeadLetter, WebhookRepository, WebhookSubscriber } from './ports/webhooks.js';

export class WebhookStore implements WebhookRepository {
  constructor(private readonly db: Db) {}

  async subscribers(): Promise<WebhookSubscriber[]> {
    return (await this.db.query<WebhookSubscriber>('select id, url, secret_env as "secretEnv", events from webhook_subscribers order by created_at')).rows;
  }

  async addSubscriber(s: WebhookSubscriber): Promise<void> {
    await this.db.query(
      `insert into webhook_subscribers (id, url, secret_env, events) values ($1, $2, $3, $4)
       on conflict (id) do update set url = excluded.url, secret_env = excluded.secret_env, events = excluded.events`,
      [s.id, s.url, s.secretEnv, JSON.stringify(s.events)],
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

  async deadLetters(limit = 100): Promise<WebhookDeadLetter[]> {
    return (
      await this.db.query<WebhookDeadLetter>(
        'select id, subscriber, event, error, attempts, created_at as "createdAt" from webhook_dead_letters order by id desc limit $1',
        [limit],
      )
    ).rows;
  }
}
