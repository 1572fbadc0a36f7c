import { LeaseLostError } from '../../kernel/lease-lost.js';
import type { Db } from '../db/port.js';
import type { DeadDelivery, DeadDeliveryRecord, DeliveryFields, DeliveryRecord, DeliveryRepository } from './ports/deliveries.js';

export type { DeadDelivery, DeadDeliveryRecord, DeliveryFields, DeliveryRecord, DeliveryRepository } from './ports/deliveries.js';

/**
 * What a turn posted on a platform. A retried turn finds its row and edits the
 * message it already posted instead of posting a second one.
 */
/** The deliveries columns as a DeliveryRecord: every statement selects (or returns) these. */
const RECORD = 'id, turn_id as "turnId", channel, target, platform_message_id as "platformMessageId", state, body, updated_at as "updatedAt"';

export class DeliveryStore implements DeliveryRepository {
  constructor(private readonly db: Db) {}

  async get(turnId: string, channel: string, target: string): Promise<DeliveryRecord | undefined> {
    return (
      await this.db.query<DeliveryRecord>(`select ${RECORD} from deliveries where turn_id = $1 and channel = $2 and target = $3`, [turnId, channel, target])
    ).rows[0];
  }

  async forTurn(turnId: string): Promise<DeliveryRecord[]> {
    return (await this.db.query<DeliveryRecord>(`select ${RECORD} from deliveries where turn_id = $1 order by id`, [turnId])).rows;
  }

  async record(turnId: string, channel: string, target: string, fields: DeliveryFields): Promise<DeliveryRecord> {
    // With an attempt, the row is written only while the turn is still at it (the fence).
    const row = (
      await this.db.query<DeliveryRecord>(
        `insert into deliveries (turn_id, channel, target, platform_message_id, state, body)
         select $1, $2, $3, $4, $5, $6
         where $7::int is null or exists (select 1 from turns where id = $1 and attempt = $7::int)
         on conflict (turn_id, channel, target) do update set
           platform_message_id = coalesce(excluded.platform_message_id, deliveries.platform_message_id),
           state = excluded.state, body = coalesce(excluded.body, deliveries.body), updated_at = now()
         returning ${RECORD}`,
        [turnId, channel, target, fields.platformMessageId ?? null, fields.state, fields.body ?? null, fields.attempt ?? null],
      )
    ).rows[0];
    if (!row) throw new LeaseLostError(`delivery ${channel}/${target} of turn ${turnId} not recorded: attempt ${fields.attempt} was overtaken`);
    return row;
  }

  async deadLetter(d: DeadDelivery): Promise<void> {
    await this.db.query(
      `insert into delivery_dead_letters (turn_id, conversation_id, channel, code, error, attempts) values ($1, $2, $3, $4, $5, $6)
       on conflict (turn_id, channel) do update set code = excluded.code, error = excluded.error, attempts = excluded.attempts, created_at = now()`,
      [d.turnId, d.conversationId, d.channel, d.code, d.error, d.attempts],
    );
  }

  async deadLetters(limit = 100): Promise<DeadDeliveryRecord[]> {
    return (
      await this.db.query<DeadDeliveryRecord>(
        `select id, turn_id as "turnId", conversation_id as "conversationId", channel, code, error, attempts, created_at as "createdAt"
         from delivery_dead_letters order by created_at desc, id desc limit $1`,
        [limit],
      )
    ).rows;
  }
}
