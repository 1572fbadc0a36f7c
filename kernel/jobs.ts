/**
 * What the queues carry: the drain of a conversation, an approval deadline, an
 * outbound event webhook. Defined here, below everything that produces or
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
}

/** An approval's deadline: fail-closed expiry resumes the parked turn. */
export interface TimerJob {
  kind: 'expire-approval';
  approvalId: string;
}

export const EVENT_TYPES = ['turn.completed', 'turn.failed', 'approval.requested', 'approval.decided', 'provider.fallback'] as const;
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
