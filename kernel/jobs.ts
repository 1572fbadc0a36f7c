import type { TurnEvent } from './turn-events.js';

/**
 * What the queues carry: the drain of a conversation, an approval deadline, an
 * outbound event webhook, a turn's reply to deliver again. Defined here, below everything that produces or
 * consumes them, so that no module needs the worker's or a service's file for a type.
 */

/** A concurrency cap a turn counts against (limits.maxConcurrentTurnsPer*). */
export interface SlotScope {
  key: string;
  cap: number;
}

export interface DrainJob {
  conversationId: string;
  /**
   * A drain for fairness: woken by a freed turn slot, or the retry of a drain that
   * found its key at its cap on concurrent turns. If another drain holds the
   * conversation it checks back later instead of waiting for it.
   */
  deferred?: boolean;
  /** The caps that refused it: its retry takes them first, so that a key still at its cap costs no SQL. */
  scopes?: SlotScope[];
  /**
   * W3C traceparent of the span that enqueued it (the message's, at ingress), when traces are
   * exported: the worker's spans continue that trace across processes (src/telemetry/).
   */
  traceparent?: string;
  /** When it was enqueued (epoch ms), set with traceparent: the start of its queue-wait span. */
  enqueuedAt?: number;
}

/** An approval's deadline: fail-closed expiry resumes the parked turn. */
export interface TimerJob {
  kind: 'expire-approval';
  approvalId: string;
}

export const EVENT_TYPES = [
  'turn.completed',
  'turn.failed',
  'approval.requested',
  'approval.decided',
  'provider.fallback',
  'schedule.undelivered',
  'handoff.requested',
  'handoff.taken',
  'handoff.returned',
  'handoff.expired',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface OutboundEvent {
  id: string;
  type: EventType;
  at: string;
  data: Record<string, unknown>;
}

/** One outbound event for one subscriber (retried with backoff by the event queue). */
export interface EventJob {
  subscriber: string;
  event: OutboundEvent;
}

/**
 * A turn's reply whose delivery failed after the turn was closed (or parked): the delivery queue
 * replays its events into a new delivery of the channel, which resumes from the deliveries table
 * (editing what was posted, posting what is missing). The model is not asked again.
 */
export interface DeliveryJob {
  turnId: string;
  /** The attempt of the turn that produced the reply (a replay delivers as a later attempt, so it resumes). */
  turnAttempt: number;
  conversationId: string;
  channel: string;
  /** The turn's inbox rows: the reply target is read from them again. */
  inboxIds: number[];
  /** What the channel saw of the turn (text deltas merged). */
  events: TurnEvent[];
  /** W3C traceparent of the turn that handed the reply over, when traces are exported. */
  traceparent?: string;
}
