import type { Logger } from 'pino';
import type { ChannelStateRepository } from '../../adapters/store/ports/channel-state.js';
import type { DeliveryRepository } from '../../adapters/store/ports/deliveries.js';
import type { Sender } from '../../kernel/envelope.js';
import type { ApprovalInfo, TurnEvent } from '../../kernel/turn-events.js';

/**
 * What every deliverer gets from the gateway. A deliverer's own settings are its parsed
 * plugin config (given when the plugin made it), never the gateway's whole Config.
 */
export interface DeliverContext {
  deliveries: DeliveryRepository;
  /** Durable per-channel key/value state (opt-outs, cursors...), shared by every process. */
  state: ChannelStateRepository;
  log: Logger;
  /**
   * The turn attempt's fence, asked right before each platform call (post, edit, stream append,
   * approval request): false once the attempt's lease is lost (another attempt runs the turn),
   * and the call is not made. Absent outside a turn (a delivery job replaying a stored answer).
   */
  fence?: () => boolean;
}

/** The conversation a turn answers, as a domain value. */
export interface Conversation {
  id: string;
  key: string;
  channel: string;
  agent: string;
}

/** What a deliverer knows about the turn it delivers. */
export interface TurnTarget<ReplyTo = unknown> {
  turnId: string;
  attempt: number;
  conversation: Conversation;
  /** The newest reply target of the turn's messages, parsed once by the channel's parseReplyTo. */
  replyTo: ReplyTo;
  /** The sender of the newest message the turn answers. */
  sender?: Sender;
}

/** What the worker hands a channel: a TurnTarget whose reply target is still as stored (unknown until parsed). */
export interface StoredTurnTarget extends Omit<TurnTarget, 'replyTo'> {
  /** The stored reply target of the newest message that has one; null when none has. */
  storedReplyTo: unknown;
}

/**
 * The target of a turn that answers these messages (oldest first): the newest stored reply
 * target among them, and the newest message's sender.
 */
export function storedTurnTarget(
  turn: { id: string; attempt: number },
  conversation: Conversation,
  messages: ReadonlyArray<{ replyTo: unknown; sender: Sender }>,
): StoredTurnTarget {
  const newest = [...messages].reverse().find((m) => m.replyTo !== null && m.replyTo !== undefined);
  const last = messages[messages.length - 1];
  return {
    turnId: turn.id,
    attempt: turn.attempt,
    conversation: { id: conversation.id, key: conversation.key, channel: conversation.channel, agent: conversation.agent },
    storedReplyTo: newest?.replyTo ?? null,
    ...(last ? { sender: last.sender } : {}),
  };
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
  /** Posts plain text to an operator place on this platform (takeover.operatorChannel: requests for a human, users' messages while taken over). */
  notifyText?(target: string, text: string, ctx: DeliverContext): Promise<void>;
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
 * message's that has one, see storedTurnTarget) with the channel's parseReplyTo, then hands the deliverer a TurnTarget.
 * A stored value the channel rejects fails the delivery with its ReplyToError.
 */
export function bindDeliverer<R>(deliverer: ChannelDeliverer<R>, parseReplyTo: (raw: unknown) => R): TurnDeliverer {
  return {
    ...(deliverer.start ? { start: (ctx) => deliverer.start!(ctx) } : {}),
    ...(deliverer.notifyApproval ? { notifyApproval: (t, a, text, ctx) => deliverer.notifyApproval!(t, a, text, ctx) } : {}),
    ...(deliverer.notifyText ? { notifyText: (t, text, ctx) => deliverer.notifyText!(t, text, ctx) } : {}),
    ...(deliverer.close ? { close: () => deliverer.close!() } : {}),
    open({ storedReplyTo, ...target }, ctx) {
      return deliverer.open({ ...target, replyTo: parseReplyTo(storedReplyTo) }, ctx);
    },
  };
}
