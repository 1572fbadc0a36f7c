import type { Logger } from 'pino';
import type { DeliveryStore } from '../../adapters/store/deliveries.js';
import type { ChannelStateStore } from '../../adapters/store/channel-state.js';
import type { LockService } from '../../adapters/lock/port.js';
import type { AccessControl } from '../access.js';
import type { ApprovalService } from '../approvals/service.js';
import type { Config } from '../config.js';
import type { HttpServer } from '../http/server.js';
import type { Ingress } from '../ingress.js';

export interface ListenContext {
  ingress: Ingress;
  approvals: ApprovalService;
  access: AccessControl;
  http: HttpServer;
  /** Durable per-channel key/value state (opt-outs, cursors...), shared by every process. */
  state: ChannelStateStore;
  /** What turns posted on platforms (status callbacks land here). */
  deliveries: DeliveryStore;
  /** Leases shared by every process (one poller per mailbox...). */
  locks: LockService;
  config: Config;
  log: Logger;
}

export interface ChannelListener {
  start(ctx: ListenContext): Promise<void>;
  close(): Promise<void>;
  /** For /readyz: a connection that is up but deaf must say so. */
  health(): { ok: boolean; message?: string };
}
