import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { LockService } from '../../adapters/lock/port.js';
import type { ChannelStateRepository } from '../../adapters/store/ports/channel-state.js';
import type { DeliveryRepository } from '../../adapters/store/ports/deliveries.js';
import type { InboundMessage } from '../../kernel/envelope.js';
import type { Identity } from '../../kernel/identity.js';
import type { TurnEvent } from '../../kernel/turn-events.js';
import type { RuleScope } from '../../moat/approval-engine.js';
import type { AnswerDecision } from '../approvals/parse.js';
import type { RequestContext } from '../http/server.js';
import type { RoomDecision, RoomQuestion } from './addressed.js';

export type { Lease } from '../../adapters/lock/port.js';
export type { DeliveryRecord } from '../../adapters/store/ports/deliveries.js';
/** One HTTP request on a mounted route: req, res, url, params, body(), json(). */
export type RouteContext = RequestContext;

/** Durable key/value state per channel (opt-outs, cursors, generations), shared by every process. */
export type ChannelState = Pick<ChannelStateRepository, 'get' | 'set' | 'delete'>;
/** What turns posted on platforms, by (turn, channel, target); status callbacks land here too. */
export type Deliveries = Pick<DeliveryRepository, 'get' | 'record'>;
/** Leases shared by every process (one poller per mailbox, a signature seen once): null when another holds it. */
export type Leases = Pick<LockService, 'tryAcquire'>;

/** A route on the gateway's HTTP server. The handler may throw: the server answers 500 (an HttpError: its status). */
export interface ChannelRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** "/v1/webhooks/:name": named parameters arrive percent-decoded in rc.params. */
  path: string;
  handler(rc: RouteContext): Promise<void> | void;
}

export interface ReceiveOptions {
  /** The channel vouched for the sender itself (an API key, a signed webhook): the access policy does not apply. */
  authenticated?: boolean;
  /** The W3C traceparent the platform's request carried (the HTTP API's header): the message's span continues that trace. */
  traceparent?: string;
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
  /** The agent that answers (default "default"). */
  agent?: string;
  /** false: "/new", "/status"... are text for the agent, not commands (the HTTP API's one-off conversations). */
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
  /** Per-sender and per-conversation rate limits (limits.sender, limits.conversation); default: when not authenticated. */
  rateLimit?: boolean;
  /**
   * Called once the message is durable and before a worker is woken: a channel that follows the turn
   * (the HTTP API) binds its follower here. May throw: the message stays accepted, receive rejects.
   */
  onAccepted?(accepted: Accepted): void | Promise<void>;
}

export interface Accepted {
  inboxId: number;
  conversationId: string;
  /** The same (channel, external id) was accepted before: nothing new was written. */
  duplicate: boolean;
  /** For a duplicate: the turn that took it, if one did. */
  turnId?: string;
  /**
   * Tell the sender this at once, before any answer: the conversation's turn waits for an approval
   * ("Waiting for an operator to approve K7Q4P (tool shell_exec); your message will be answered after
   * that."). The message is accepted all the same and answered once the turn goes on. Never on a duplicate.
   */
  notice?: string;
}

/** The approval as a channel shows it once answered. */
export interface ApprovalSummary {
  code: string;
  status: string;
  always: boolean;
  decidedBy: string | null;
  decidedAt: Date | null;
}

export type ApprovalAnswer =
  | { ok: true; message: string; approval: ApprovalSummary }
  /** code: not_operator, unknown_code, already_decided, expired, always_not_permitted, too_many_attempts... */
  | { ok: false; code: string; message: string; approval?: ApprovalSummary };

/** What became of a message: the channel tells the sender `reply` when there is one. */
/** `replayed`: the event was handled before (a platform's retry); this is its first outcome again, and nothing was done twice. */
export type ReceiveOutcome = (
  | ({ kind: 'accepted' } & Accepted)
  /** request_mismatch: the message's external id (Idempotency-Key) came before with another requestHash. */
  | { kind: 'refused'; reason: 'access' | 'rate_limit' | 'conversation_full' | 'request_mismatch'; reply?: string; retryAfterMs?: number }
  /** A command (/new, /status...) or an approval answer, answered by the gateway without a turn. */
  | {
      kind: 'answered';
      /** May be empty with `handoff`: nothing to tell the sender (an operator answers them in the thread). */
      reply: string;
      ok: boolean;
      command?: string;
      approval?: { code: string; answer: ApprovalAnswer };
      /**
       * Human takeover: the conversation is with an operator (or waits for one) and the message was
       * passed on to them, no turn answers it; `operator`: it was an operator's own command or message.
       */
      handoff?: { id: string; state: 'requested' | 'taken' | 'returned'; operator?: true };
    }
) & { replayed?: true };

/** Who made an HTTP request, by API key (the key's hash, never the key). */
export interface Principal {
  id: string;
  operator: boolean;
}

export type Authentication = { ok: true; principal: Principal } | { ok: false; status: 401 | 429; message: string; code: string; retryAfterMs?: number };

/** Follows the turn that answers one accepted message (subscribe first, then bind). */
export interface TurnFollower {
  bind(inboxId: number, knownTurnId?: string): void;
  /** The next event of the bound turn, or null after timeoutMs. Ends with done or error. */
  next(timeoutMs: number): Promise<TurnEvent | null>;
  /** Looks the finished turn up in the store now (replay: a duplicate may be done already). */
  poll(replay?: boolean): Promise<void>;
  close(): void;
}

/**
 * What a listener may do, and nothing else: no configuration, no services, no rows.
 * Every method may throw on a store or queue failure (the platform should redeliver then).
 */
export interface ListenContext {
  /** The one way in: access, limits, commands, approval answers, the durable inbox, a worker woken. */
  receive(message: InboundMessage, opts?: ReceiveOptions): Promise<ReceiveOutcome>;
  /**
   * Group-chat manners, asked BEFORE receive, any typing indicator or model call: is this room
   * message addressed to the bot (addressedToMe over the facts), within the bot-to-bot loop guard,
   * or an unprompted reply ambient mode allows? `answer: false`: say nothing, do nothing (counted in
   * switchboard_room_messages_ignored_total{channel,reason}). DMs (facts.isDirect) are always answered.
   */
  shouldAnswer(question: RoomQuestion): Promise<RoomDecision>;
  /**
   * An approval decided by a click (a button) rather than a typed answer. `operator`: the platform
   * vouches for the actor (a Discord operator role); configured operators are recognized anyway.
   */
  answerApproval(code: string, decision: AnswerDecision, actor: Identity, opts?: { operator?: boolean; scope?: RuleScope }): Promise<ApprovalAnswer>;
  /** A configured operator (approvals.operators). */
  isOperator(identity: Identity): boolean;
  /** Approvals waiting for an answer (a code typed in passing is only an answer if one is pending). */
  pendingApprovals(): Promise<Array<{ code: string; channel: string }>>;
  /** The access policy alone, for platform actions that are no message (slash commands). */
  checkAccess(identity: Identity): Promise<{ allowed: true } | { allowed: false; reply?: string }>;
  /** A route on the gateway's HTTP server (webhooks, the HTTP API). */
  mount(route: ChannelRoute): void;
  /** API-key authentication for channels that are HTTP APIs; rateLimit: requests per key (limits.apiKey) too. */
  authenticate(req: IncomingMessage, opts?: { rateLimit?: boolean }): Promise<Authentication>;
  /**
   * False when no worker process has beaten within the heartbeat TTL (read at most once a second):
   * a channel that waits for the answer (the HTTP API) refuses at once instead of waiting for nobody.
   * True when it cannot be known (the store does not answer). Must not throw.
   */
  workersAlive(): Promise<boolean>;
  /** attachments.maxImageBytes: the largest image a channel downloads for the model (DEFAULT_MAX_IMAGE_BYTES when absent). */
  readonly maxImageBytes?: number;
  /**
   * Human takeover: the open handoff of the conversation with this key (taken over by an operator,
   * or waiting for one), else null. A channel that answers only addressed messages passes on every
   * message of such a conversation's room (the transcript keeps both sides), and an operator's
   * "takeover" (parseOperatorCommand) even unaddressed.
   */
  handoffOf?(conversationKey: string): Promise<{ id: string; state: 'requested' | 'taken' } | null>;
  /** Whether a conversation with this key exists (a channel keeping a conversation opened under an older key). */
  conversationExists(conversationKey: string): Promise<boolean>;
  /** A follower of the turns of one conversation, subscribed before the message is received. */
  follow(conversationKey: string): Promise<TurnFollower>;
  /**
   * A message the channel itself chose not to hand on (too old to catch up, an auto-reply, an
   * unauthenticated sender…): counted in switchboard_messages_dropped_total{channel,reason} and shown
   * in the console. Refusals of receive() (access, rate limit, waiting cap) are counted already. Must not throw.
   */
  dropped(reason: string): void;
  state: ChannelState;
  deliveries: Deliveries;
  leases: Leases;
  log: Logger;
}

export interface ChannelListener {
  /** May throw (a refused token): the gateway does not start. Long connects belong in the background. */
  start(ctx: ListenContext): Promise<void>;
  close(): Promise<void>;
  /** For /readyz: a connection that is up but deaf must say so. Must not throw. */
  health(): { ok: boolean; message?: string };
}
