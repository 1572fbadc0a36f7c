/** One handoff: the agent asked for a human, or an operator took the conversation over (migration 028). */
export type HandoffState = 'requested' | 'taken' | 'returned' | 'expired';
export type HandoffUrgency = 'low' | 'normal' | 'high';

export interface HandoffRecord {
  id: string;
  conversationId: string;
  conversationKey: string;
  channel: string;
  state: HandoffState;
  reason: string | null;
  urgency: HandoffUrgency;
  /** `agent:<turn>` (request_handoff) or the operator's identity. */
  requestedBy: string;
  /** Who took it (an identity: `http:<key id>`, `slack:T1:U9`); null while only requested. */
  operator: string | null;
  requestedAt: string;
  takenAt: string | null;
  returnedAt: string | null;
  returnedBy: string | null;
  note: string | null;
  /** A request's SLA: when the sweep tells the user nobody came (null: none). */
  slaDeadline: string | null;
  slaFiredAt: string | null;
}

export interface NewHandoffRequest {
  conversationId: string;
  reason: string | null;
  urgency: HandoffUrgency;
  requestedBy: string;
  slaDeadline: Date | null;
}

/** A message of the taken-over time, as the transcript keeps it (who said it is in `author`). */
export interface HandoffMessage {
  /** An inbox row is written for it (consumed at once) when it came in from a channel: a redelivery finds it. */
  inbox?: { channel: string; externalId: string; sender: unknown; senderIdentity: string; replyTo: unknown; receivedAt: Date };
  role: 'user' | 'operator' | 'note';
  /** The stored message (pi-ai shape, with `author`, `text` and `handoff`). */
  content: Record<string, unknown>;
}

export type TakeResult =
  | { ok: true; handoff: HandoffRecord /** It was requested before (by the agent), not taken on the operator's own initiative. */; wasRequested: boolean }
  | { ok: false; code: 'already_taken'; handoff: HandoffRecord };

export type HandbackResult = { ok: true; handoff: HandoffRecord } | { ok: false; code: 'not_taken_over' };

/**
 * Handoffs: the open one of a conversation, requests, takeovers and handbacks (each written with
 * its audit-ledger row in one transaction), the messages of the taken-over time, and the SLA sweep.
 */
/** How long the worker that fired an SLA has to queue the user's notice before another worker's sweep sends it (a dead worker's). */
export const SLA_NOTICE_LEASE_MS = 60_000;

export interface HandoffRepository {
  /** The open (requested or taken) handoff of a conversation, if any. */
  open(conversationId: string): Promise<HandoffRecord | undefined>;
  get(id: string): Promise<HandoffRecord | undefined>;
  /** Open handoffs (requests waiting first, then active takeovers), and the last `recent` closed ones. */
  list(opts?: { recent?: number }): Promise<HandoffRecord[]>;
  /** A request (state requested), audited `handoff.requested`; an already open handoff is returned instead (created: false). */
  request(r: NewHandoffRequest): Promise<{ handoff: HandoffRecord; created: boolean }>;
  /** Takes the conversation over: its open request, or a new handoff. Audited `handoff.taken`. One winner among concurrent takers. */
  take(conversationId: string, operator: string): Promise<TakeResult>;
  /**
   * Hands the conversation back to the agent (taken or requested → returned), audited
   * `handoff.returned`; the note message (for the agent's next turn) is written in the same transaction.
   */
  handback(conversationId: string, by: string, note: string | null, noteMessage: (h: HandoffRecord) => Record<string, unknown>): Promise<HandbackResult>;
  /**
   * Records a message of the taken-over time: its inbox row (when it has one; consumed, turn
   * 'handoff:<id>') and its transcript message, together. duplicate: the inbox row was there (a
   * redelivery): nothing was written. first: no user message was recorded in this handoff before.
   * closed: the handoff was handed back (or expired) before this could be written (a handback racing
   * the message): nothing was written, so the message is the agent's again, not lost in a closed handoff.
   */
  record(
    handoffId: string,
    conversationId: string,
    m: HandoffMessage,
  ): Promise<{ duplicate: boolean; messageId: number | null; first: boolean; closed?: boolean }>;
  /**
   * Fires the SLA of every request whose deadline has passed, exactly once each (sla_fired_at set
   * only while null), audited `handoff.expired`; `resume`: the request is closed (expired), else it
   * stays requested. `message` is written to its transcript in the same transaction.
   */
  expireDue(
    now: Date,
    resume: boolean,
    message: (h: HandoffRecord) => Record<string, unknown>,
    limit?: number,
    noticeLeaseUntil?: Date,
  ): Promise<HandoffRecord[]>;
  /**
   * The user's notice of a fired SLA is leased to the worker that fired it (until
   * `noticeLeaseUntil`, by default a minute on) and marked sent once it is in the delivery queue
   * (slaNoticeSent). A notice still unsent past its lease (that worker died in between) is claimed
   * here, exactly one caller winning each, leased again until `leaseUntil`.
   */
  claimUnsentSlaNotices(now: Date, leaseUntil: Date, limit?: number): Promise<HandoffRecord[]>;
  /** The user's SLA notice of this handoff is queued for delivery (or has nowhere to go): not sent again. */
  slaNoticeSent(id: string): Promise<void>;
  /** The newest inbox row of the conversation that has a reply target (where a message to the user goes). */
  replyTarget(conversationId: string): Promise<number | undefined>;
}
