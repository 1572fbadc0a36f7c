import type { DeliveryRow } from '../../adapters/store/deliveries.js';

/** The narrow slice of the gateway's DeliveryStore this channel writes to. */
export interface DeliveryLog {
  get(turnId: string, channel: string, target: string): Promise<DeliveryRow | undefined>;
  record(turnId: string, channel: string, target: string, fields: { platformMessageId?: string | null; state: string; body?: string | null }): Promise<DeliveryRow>;
}

/**
 * Where the sms channel keeps its few durable facts (opt-outs, status
 * callbacks): the gateway's deliveries table, which both the listen and the
 * deliver context hand over.
 */
export class SmsStore {
  private log?: DeliveryLog;

  bind(log: DeliveryLog): void {
    this.log ??= log;
  }

  get available(): boolean {
    return this.log !== undefined;
  }

  get deliveries(): DeliveryLog {
    if (!this.log) throw new Error('sms: no delivery store yet (start() binds it)');
    return this.log;
  }

  async close(): Promise<void> {}
}
