import type { AcceptResult } from '../../adapters/store/ports/index.js';
import { SwitchboardError } from '../../kernel/errors.js';
import type { CommandName } from '../commands.js';

/**
 * Why a message was turned away. `conversation_full` and `rate_limited` are for now only: the sender may try again.
 * `request_mismatch`: the external id (an HTTP Idempotency-Key) was used before for a message with another requestHash.
 */
export type RefusalCode = 'access' | 'rate_limited' | 'conversation_full' | 'request_mismatch';

/** Set on an outcome replayed for a redelivered event: nothing was done again (a channel need not tell the sender twice). */
interface Replay {
  replayed?: true;
}

/**
 * Durable in the inbox (a duplicate when the event was there already); a worker answers it.
 * `notice`: what the channel tells the sender at once, before any answer (the conversation's
 * turn is parked on an approval: "Waiting for an operator to approve K7Q4P …"). Never on a duplicate.
 */
export type AcceptedOutcome = { kind: 'accepted'; notice?: string } & AcceptResult & Replay;

export type RefusedOutcome = { kind: 'refused'; code: RefusalCode; reply?: string; retryAfterMs?: number } & Replay;

/** Answered by the gateway itself (a conversation command, an approval answer): nothing goes to the agent. */
export type AnsweredOutcome = {
  kind: 'answered';
  reply: string;
  ok: boolean;
  command?: CommandName;
  approval?: { code: string; ok: boolean; status?: string; error?: string };
  /**
   * The conversation is with an operator (taken over) or waits for one (requested): the message was
   * passed on to them, no turn answers it; or an operator's own takeover command or message
   * (`operator`). `reply` may be empty: nothing to tell the sender (the operator is in the thread).
   */
  handoff?: { id: string; state: 'requested' | 'taken' | 'returned'; operator?: true };
} & Replay;

/** What became of an inbound message; the channel tells the sender when there is a reply. */
export type IngressOutcome = AcceptedOutcome | RefusedOutcome | AnsweredOutcome;

export interface ReceiveOptions {
  /**
   * The caller authenticated itself (an API key, an HMAC signature): the access
   * policy is skipped, and rate limits apply only to the HTTP API with limits.applyToHttp.
   */
  authenticated?: boolean;
  /** The W3C traceparent the platform's request carried (the HTTP API's header): the message's span continues that trace. */
  traceparent?: string;
  /**
   * Called once the message is durable, before a worker is woken (so a caller
   * that follows the turn misses none of it); also for a duplicate. May throw:
   * the message stays accepted and the error reaches the caller.
   */
  onAccepted?: (r: AcceptedOutcome) => void | Promise<void>;
  /** The agent a new conversation gets (default "default"). */
  agent?: string;
  /** The external id was made up for this call (an HTTP request without Idempotency-Key): it cannot come again, so nothing is looked up or recorded for it. */
  fresh?: boolean;
  /**
   * The conversation's key was made up for this call from a random id (a one-off HTTP request without
   * Idempotency-Key): no row can exist for it yet, so nothing is looked up about it before the
   * message is written (its parked approvals, its waiting messages, a running turn to interrupt).
   */
  newConversation?: boolean;
  /** The authenticated sender holds operator rights (an operator API key): their typed approval answers count. */
  operator?: boolean;
  /** false: "/new", "/status"... are text for the agent (the HTTP API's one-off conversations, webhooks). */
  commands?: boolean;
  /**
   * Human takeover: an operator's message in the conversation's own thread that the platform did not
   * show the user (an email to the bot alone, false) or did (true): false delivers it to the user
   * through the channel's delivery. Default: shown (a chat thread).
   */
  shownToUser?: boolean;
  /** Human takeover: an operator's message that takes the conversation over when nobody holds it (an operator's reply on an email thread). */
  takesOver?: boolean;
  /** false: "YES K7Q4P" is text for the agent, not an approval answer (webhooks). */
  approvalAnswers?: boolean;
  /** Per-sender and per-conversation rate limits; default: unauthenticated callers, and the HTTP API with limits.applyToHttp. */
  rateLimit?: boolean;
}

/** Refused by a conversation rule (the cap on waiting messages): nothing was written. For callers that want a throw. */
export class ConversationFullError extends SwitchboardError {
  readonly code = 'conversation_full';
  // The cap lifts as the conversation's turns finish.
  override readonly retryable = true;
  constructor(readonly reply: string) {
    super(reply);
    this.name = 'ConversationFullError';
  }
}
