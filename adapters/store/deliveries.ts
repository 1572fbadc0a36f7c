import type { Db } from '../db/port.js';
import type { DeadDelivery, DeadDeliveryRow, DeliveryRepository, DeliveryRow } from './ports/deliveries.js';

export type { DeadDelivery, DeadDeliveryRow, DeliveryRepository, DeliveryRow } from './ports/deliveries.js';

/**
 * What a turn posted on a platform. A retried turn finds its row and edits the
 * message it already posted instead of posting a second one.
 */
export class DeliveryStore implements DeliveryRepository {
  constructor(private readonly db: Db) {}

  async get(turnId: string, channel: string, target: string): Promise<DeliveryRow | undefined> {
    return (await this.db.query<DeliveryRow>('select * from deliveries where turn_id = $1 and channel = $2 and target = $3', [turnId, channel, target]))
      .rows[0];
  }

  async forTurn(turnId: string): Promise<DeliveryRow[]> {
    return (await this.db.query<DeliveryRow>('select * from deliveries where turn_id = $1 order by id', [turnId])).rows;
  }

  async record(
    turnId: string,
    channel: string,
    target: string,
    fields: { platformMessageId?: string | null; state: string; body?: string | null },
  ): Promise<DeliveryRow> {
    return (
      await this.db.query<DeliveryRow>(
        `insert into deliveries (turn_id, channel, target, platform_message_id, state, body) values ($1, $2, $3, $4, $5, $6)
         on conflict (turn_id, channel, target) do update set
           platform_message_id = coalesce(excluded.platform_message_id, deliveries.platform_message_id),
           state = excluded.state, body = coalesce(excluded.body, deliveries.body), updated_at = now()
         returning *`,
        [turnId, channel, target, fields.platformMessageId ?? null, fields.state, fields.body ?? null],
      )
    ).rows[0]!;
  }

  async deadLetter(d: DeadDelivery): Promise<void> {
    await this.db.query(
      `insert into delivery_dead_letters (turn_id, conversation_id, channel, code, error, attempts) values ($1, $2, $3, $4, $5, $6)
       on conflict (turn_id, channel) do update set code = excluded.code, error = excluded.error, attempts = excluded.attempts, created_at = now()`,
      [d.turnId, d.conversationId, d.channel, d.code, d.error, d.attempts],
    );
  }

  async deadLetters(limit = 100): Promise<DeadDeliveryRow[]> {
    return (await this.db.query<DeadDeliveryRow>('select * from delivery_dead_letters order by created_at desc, id desc limit $1', [limit])).rows;
  }
}
