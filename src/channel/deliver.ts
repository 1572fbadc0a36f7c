import type { Logger } from 'pino';
import type { ConversationRow, InboxRow } from '../../adapters/store/store.js';
import type { DeliveryStore } from '../../adapters/store/deliveries.js';
import type { ChannelStateStore } from '../../adapters/store/channel-state.js';
import type { Config } from '../config.js';
import type { ApprovalInfo, TurnEvent } from '../../kernel/turn-events.js';

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
