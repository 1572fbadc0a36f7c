import type { Logger } from 'pino';
import type { ConversationRow, InboxRow } from '../adapters/store/store.js';
import type { DeliveryStore } from '../adapters/store/deliveries.js';
import type { ChannelStateStore } from '../adapters/store/channel-state.js';
import type { LockService } from '../adapters/lock/port.js';
import type { AccessControl } from './access.js';
import type { ApprovalService } from './approvals/service.js';
import type { Config } from './config.js';
import type { ApprovalInfo, TurnEvent } from './events.js';
import type { HttpServer } from './http/server.js';
import type { Ingress } from './ingress.js';

/**
 * A chat platform, in two halves. `listen` runs in the ingress: it receives
 * platform events (a long-lived connection or webhook routes on the gateway's
 * HTTP server), verifies them, normalizes them into InboundMessages for
 * ctx.ingress.accept(), and routes approval answers (buttons, "YES K7Q4P") to
 * ctx.approvals.answer(). `deliver` runs where the turn runs: it turns the
 * agent's event stream into what the platform can show. Platform code stays in
 * channels/<name>/; nothing else imports its SDK.
 */
export interface ChannelPlugin {
  readonly name: string;
  /** Validates this channel's configuration section (channels.<name>); throw ConfigError naming the key. */
  configure(raw: unknown, env: Record<string, string | undefined>): ChannelInstance;
}

export interface ChannelInstance {
  readonly name: string;
  /** Ingress side; absent for deliver-only channels. */
  listener?: ChannelListener;
  /** Worker side. */
  deliverer?: ChannelDeliverer;
}

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

export interface DeliverContext {
  deliveries: DeliveryStore;
  /** Durable per-channel key/value state (opt-outs, cursors...), shared by every process. */
  state: ChannelStateStore;
  config: Config;
  log: Logger;
}

/** What a deliverer knows about the turn it delivers. */
export interface TurnTarget {
  turnId: string;
  attempt: number;
  conversation: ConversationRow;
  /** The inbox rows the turn answers (replyTo holds the channel's own target data). */
  batch: InboxRow[];
}

export interface ChannelDeliverer {
  start?(ctx: DeliverContext): Promise<void>;
  /** One delivery per turn attempt. Events arrive in order; close() flushes and resolves once delivered. */
  open(target: TurnTarget, ctx: DeliverContext): TurnDelivery;
  /**
   * Posts an approval request to an operator place on this platform (a channel
   * id, a phone number...): approvals.operatorChannel. Buttons where the platform has them.
   */
  notifyApproval?(target: string, approval: ApprovalInfo, text: string, ctx: DeliverContext): Promise<void>;
  close?(): Promise<void>;
}

export interface TurnDelivery {
  event(e: TurnEvent): void;
  /** Delivers whatever is buffered; the turn is only closed after this resolves. */
  close(): Promise<void>;
}
