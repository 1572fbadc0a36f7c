/**
 * The agent's event stream for one turn, as a typed union. The worker produces
 * these; each channel's deliver side turns them into what its platform can show,
 * and the HTTP channel receives them over the bus.
 */
export interface TurnUsage {
  input: number;
  output: number;
  totalTokens: number;
  cost: number;
}

export interface ApprovalInfo {
  code: string;
  tool: string;
  tier: string;
  expiresAt: string;
  args: unknown;
  reasons: string[];
  /** Whether "always allow" may be offered (an exact rule can be made); absent means no. */
  alwaysPermitted?: boolean;
  /**
   * Whether the person who asked may answer it themselves (an operator, or a tier in
   * approvals.requesterMay): false means "An operator must approve this"; absent means unknown
   * (the request then says how to answer, as before).
   */
  selfApprovable?: boolean;
}

export interface TurnProvider {
  slot: string | null;
  fallbackActivated: boolean;
  attempts: Array<{ slot: string; error: string; ms: number }>;
}

export type TurnEvent =
  | { type: 'turn_start'; turnId: string; conversationId: string; inboxIds: number[]; attempt: number }
  /** Text to append to the reply being shown. */
  | { type: 'text_delta'; turnId: string; delta: string }
  /** Withdraw the partial reply shown so far (a provider fell over mid-stream). */
  | { type: 'reset'; turnId: string; reason: string }
  | { type: 'tool_start'; turnId: string; toolCallId: string; name: string; args: unknown }
  /**
   * A tool call ended. `pending` set: the call did not run and is not a failure; it waits for an
   * operator's approval (shown as "waiting for approval (code K7Q4P)"), and an approval_requested
   * event carries the whole request.
   */
  | { type: 'tool_end'; turnId: string; toolCallId: string; name: string; isError: boolean; pending?: { code: string } }
  | { type: 'approval_requested'; turnId: string; approval: ApprovalInfo }
  /** Something the user should be told that is not part of the answer. */
  | { type: 'notice'; turnId: string; text: string }
  | {
      type: 'done';
      turnId: string;
      /** The whole reply text, as the deltas added up to. */
      text: string;
      finishReason: FinishReason;
      usage: TurnUsage;
      /** Which provider slot answered, whether it was a fallback, and every attempt. */
      provider?: TurnProvider;
      /** finishReason 'approval_pending': the calls waiting for an operator. */
      approvals?: ApprovalInfo[];
    }
  | { type: 'error'; turnId: string; message: string; code: string };

export type FinishReason = 'stop' | 'length' | 'turn_cap' | 'error' | 'aborted' | 'no_provider' | 'approval_pending' | 'blocked_secret' | 'budget';

export type TurnEventType = TurnEvent['type'];

/**
 * Where an event stands in its turn, as it crosses the bus: the publishing side numbers each
 * turn's events (`seq` from 1, in order, per attempt and per publishing `run`: a parked turn
 * resumed later is a new run). A subscriber drops a seq it has seen (the Redis client resends a
 * write it got no answer for), reads the topic's history again when one is skipped, and lets a
 * newer attempt replace an older one. Absent on events from an older gateway.
 */
export interface TurnEventOrder {
  attempt: number;
  seq: number;
  run: string;
}

/** A turn event as the bus carries it. */
export type BusTurnEvent = TurnEvent & Partial<TurnEventOrder>;

/**
 * Where a turn's events go: the bus, the metrics, the event webhooks and the channel delivery are
 * each one sink. `push` must not throw and must not block (a sink that fails logs and drops);
 * `flush` resolves once what the sink buffered is delivered: the turn is closed or parked only after it.
 */
export interface TurnEventSink {
  push(e: TurnEvent): void;
  flush?(): Promise<void>;
}
