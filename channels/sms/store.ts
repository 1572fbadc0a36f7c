import type { Deliveries } from '../../src/channel/index.js';

/** The narrow slice of the gateway's deliveries this channel writes to. */
export type DeliveryLog = Deliveries;

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
