import type { ContextMessage, InboundMessage, TurnOverrides } from '../../../kernel/envelope.js';
import { formatIdentity, identityOf } from '../../../kernel/identity.js';

/** An inbound message as the inbox holds it. */
export interface InboxMessage {
  id: number;
  conversationId: string;
  channel: string;
  externalId: string;
  sender: { id: string; workspace?: string; name?: string };
  /**
   * The sender's identity in canonical form (kernel/identity.ts): what every look-up
   * by sender compares. Null only on a row written by a version from before
   * migration 010 after it ran (see senderIdentity()).
   */
  senderIdentity: string | null;
  text: string;
  attachments: unknown[];
  replyTo: Record<string, unknown> | null;
  context: ContextMessage[] | null;
  /** What the message asked of its turn (migration 015); null or absent when nothing. */
  overrides?: TurnOverrides | null;
  /** InboundMessage.requestHash (migration 015). */
  requestHash?: string | null;
  /** The traceparent of the message's span at ingress (migration 027), when traces are on. */
  traceparent?: string;
  receivedAt: Date;
  turnId: string | null;
  consumedAt: Date | null;
}

/** What the ingress knows of a message beside the message itself. */
export interface AcceptMeta {
  /** The message span's W3C traceparent (src/telemetry/tracer.ts jobTrace), when traces are on. */
  traceparent?: string;
}

export interface AcceptResult {
  conversationId: string;
  inboxId: number;
  /** True when (channel, externalId) was already in the inbox: nothing new was written. */
  duplicate: boolean;
  /** On a duplicate: the first message's requestHash, when it had one (compare it with the redelivery's). */
  requestHash?: string;
  /** On a duplicate: the message came while the conversation was taken over by an operator (this handoff's id); no turn answers it. */
  handoff?: string;
}

/**
 * The inbox: every inbound message, written once per (channel, external id),
 * claimed by a turn (turnId) and consumed when that turn closes.
 */
export interface InboxRepository {
  /**
   * Upserts the conversation (by key; a new one gets `agent`) and writes the
   * inbox row, atomically. A second message with the same (channel, external
   * id) writes nothing and reports the first row with `duplicate: true`.
   */
  accept(msg: InboundMessage, agent?: string, meta?: AcceptMeta): Promise<AcceptResult>;
  /** The row of a message already written, as accept() reports a duplicate; undefined if none. */
  inboxByExternalId(channel: string, externalId: string): Promise<AcceptResult | undefined>;
  /** Unconsumed rows of a conversation, oldest (lowest id) first, claimed or not. */
  pending(conversationId: string): Promise<InboxMessage[]>;
  inboxRow(id: number): Promise<InboxMessage | undefined>;
  /**
   * Steering: claims every unclaimed, unconsumed row of the conversation into
   * the turn, atomically (a row is claimed by one turn only), and returns them
   * oldest first. Call only while the drain's lease holds.
   */
  claimInto(turnId: string, conversationId: string): Promise<InboxMessage[]>;
  /** Conversations with a row unconsumed for longer than olderThanMs since it was written (the recovery sweep). */
  stuckConversations(olderThanMs: number): Promise<string[]>;
}

/** The canonical identity of an inbox message's sender (computed from the message when a version before migration 010 wrote it). */
export function senderIdentity(message: Pick<InboxMessage, 'channel' | 'sender' | 'senderIdentity'>): string {
  return message.senderIdentity ?? formatIdentity(identityOf(message));
}
