import type { Logger } from 'pino';
import { openPostgres } from '../../adapters/db/pg.js';
import type { Db } from '../../adapters/db/port.js';
import { DeliveryStore, type DeliveryRow } from '../../adapters/store/deliveries.js';
import type { Config } from '../../src/config.js';

/** The narrow slice of the gateway's DeliveryStore this channel writes to. */
export interface DeliveryLog {
  get(turnId: string, channel: string, target: string): Promise<DeliveryRow | undefined>;
  record(turnId: string, channel: string, target: string, fields: { platformMessageId?: string | null; state: string; body?: string | null }): Promise<DeliveryRow>;
}

/**
 * Where the sms channel keeps its few durable facts (opt-outs, status
 * callbacks): the gateway's deliveries table. The deliverer receives the
 * DeliveryStore in start(); the listener, which gets no store in its context,
 * uses the same one when both run in one process (`switchboard start`, the
 * embedded default: the deliverer starts first). A lone ingress
 * (`switchboard ingress`, always on Postgres) opens a small pool of its own on
 * `databaseUrl`.
 */
export class SmsStore {
  private log?: DeliveryLog;
  private own?: Db;

  bind(log: DeliveryLog): void {
    this.log ??= log;
  }

  /** For the listener: make sure a store is there (opens one on databaseUrl when no deliverer runs here). */
  async ensure(config: Config, logger: Logger): Promise<void> {
    if (this.log || !config.databaseUrl) return;
    this.own = await openPostgres(config.databaseUrl, { max: 2 });
    this.log = new DeliveryStore(this.own);
    logger.debug('sms: opened a Postgres pool for opt-outs and status callbacks');
  }

  get available(): boolean {
    return this.log !== undefined;
  }

  get deliveries(): DeliveryLog {
    if (!this.log) throw new Error('sms: no delivery store (the listener started without a deliverer and without databaseUrl)');
    return this.log;
  }

  async close(): Promise<void> {
    const own = this.own;
    this.own = undefined;
    if (own) {
      this.log = undefined;
      await own.close();
    }
  }
}
