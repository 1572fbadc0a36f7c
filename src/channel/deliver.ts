import type { Logger } from 'pino';
import type { ChannelStateRepository } from '../../adapters/store/ports/channel-state.js';
import type { DeliveryRepository } from '../../adapters/store/ports/deliveries.js';
import type { ConversationRecord, InboxMessage } from '../../adapters/store/ports/index.js';
import type { ApprovalInfo, TurnEvent } from '../../kernel/turn-events.js';
import type { Config } from '../config.js';

export interface DeliverContext {
  deliveries: DeliveryRepository;
  /** Durable per-channel key/value state (opt-outs, cursors...), shared by every process. */
  state: ChannelStateRepository;
  config: Config;
  log: Logger;
}

/** The conversation a turn answers, as a domain value. */
export interface Conversation {
  id: string;
  key: string;
  channel: string;
  agent: string;
}

/** What the worker knows of a turn it hands to a channel (before the channel's reply target is parsed). */
export interface StoredTurnTarget {
  turnId: string;
  attempt: number;
  /** @deprecated the row; read the Conversation fields (id, key, channel, agent) only. */
  conversation: ConversationRecord;
  /** @deprecated the inbox rows the turn answers; use replyTo (and conversation.key). */
  batch: InboxMessage[];
}

/** What a deliverer knows about the turn it delivers. */
export interface TurnTarget<ReplyTo = unknown> extends StoredTurnTarget {
  conversation: ConversationRecord & Conversation;
  /** The newest reply target of the turn's messages, parsed once by the channel's parseReplyTo. */
  replyTo: ReplyTo;
  /** The sender of the newest message the turn answers. */
  sender?: { id: string; workspace?: string; name?: string };
}

export interface ChannelDeliverer<ReplyTo = unknown> {
  start?(ctx: DeliverContext): Promise<void>;
  /** One delivery per turn attempt. Events arrive in order; close() flushes and resolves once delivered. */
  open(target: TurnTarget<ReplyTo>, ctx: DeliverContext): TurnDelivery;
  /**
   * Posts an approval request to an operator place on this platform (a channel
   * id, a phone number...): approvals.operatorChannel. Buttons where the platform has them.
   */
  notifyApproval?(target: string, approval: ApprovalInfo, text: string, ctx: DeliverContext): Promise<void>;
  close?(): Promise<void>;
}

/** A channel's deliverer as the worker drives it: the reply target is parsed inside open(). */
export interface TurnDeliverer extends Omit<ChannelDeliverer, 'open'> {
  open(target: StoredTurnTarget, ctx: DeliverContext): TurnDelivery;
}

export interface TurnDelivery {
  event(e: TurnEvent): void;
  /** Delivers whatever is buffered; the turn is only closed after this resolves. */
  close(): Promise<void>;
}

/**
 * The worker's view of a channel's deliverer: open() parses the stored reply target (the newest
 * message's that has one) with the channel's parseReplyTo, then hands the deliverer a TurnTarget.
 * A stored value the channel rejects fails the delivery with its ReplyToError.
 */
export function bindDeliverer<R>(deliverer: ChannelDeliverer<R>, parseReplyTo: (raw: unknown) => R): TurnDeliverer {
  return {
    ...(deliverer.start ? { start: (ctx) => deliverer.start!(ctx) } : {}),
    ...(deliverer.notifyApproval ? { notifyApproval: (t, a, text, ctx) => deliverer.notifyApproval!(t, a, text, ctx) } : {}),
    ...(deliverer.close ? { close: () => deliverer.close!() } : {}),
    open(stored, ctx) {
      const newest = [...stored.batch].reverse().find((r) => r.replyTo !== null && r.replyTo !== undefined);
      const last = stored.batch[stored.batch.length - 1];
      return deliverer.open({ ...stored, replyTo: parseReplyTo(newest?.replyTo ?? null), ...(last ? { sender: last.sender } : {}) }, ctx);
    },
  };
}
