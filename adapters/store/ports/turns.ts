import type { InboundMessage } from '../../../kernel/envelope.js';
import type { ConversationRecord } from './conversations.js';
import type { AcceptMeta, AcceptResult, InboxMessage } from './inbox.js';
import type { StoredMessage } from './transcript.js';

/** A turn as stored. */
export interface TurnRecord {
  id: string;
  conversationId: string;
  seq: number;
  status: 'running' | 'parked' | 'done' | 'failed';
  /** A turn that was parked for approvals: its loop state (see turn-runner). */
  state: unknown;
  honesty: unknown;
  attempt: number;
  worker: string | null;
  startedAt: Date;
  finishedAt: Date | null;
  finishReason: string | null;
  error: string | null;
  usage: Record<string, unknown> | null;
  provider: Record<string, unknown> | null;
}

export interface StartTurn {
  conversationId: string;
  worker: string;
  /** This drain's lease token, and how long the lease lasts unless renewed. */
  lease: string;
  leaseMs: number;
  /** Which rows a new turn claims (a turn that already claimed rows is always resumed, except with `none`). */
  claim: 'auto' | 'all' | 'none';
  /** Queue modes from the configuration; a conversation's own mode wins. */
  modes: { default: string; byChannel: Record<string, string> };
  /** Transcript window by agent name (`default` for an unknown agent). */
  historyLimits: Record<string, number>;
  memoryLimit: number;
}

/** What the turn starts from: the transcript window and memory notes. */
export interface StartContext {
  history: StoredMessage[];
  historyIds: number[];
  summary: string | null;
  memory: string[];
}

export interface StartedTurn {
  /** Set when this drain holds the lease. */
  conversation: ConversationRecord | null;
  mode: string | null;
  /** Something waits and no turn is parked (whether or not the lease was free). */
  hasWork: boolean;
  /** The unconsumed rows, oldest first, as the statement found them (before its claim). */
  pending: InboxMessage[];
  /** The opened or resumed turn, the rows it answers, and its context. */
  turn?: TurnRecord;
  batch?: InboxMessage[];
  context?: StartContext;
}

/** The first turn acceptOpening() opens with a new conversation's message, as the drain that runs it would in startTurn. */
export interface OpenTurn {
  turnId: string;
  worker: string;
  /** The drain's lease token, and how long the lease lasts unless renewed. */
  lease: string;
  leaseMs: number;
  memoryLimit: number;
}

export interface AcceptOpened {
  accepted: AcceptResult;
  /** Set when the conversation was new and its turn is open under `lease`: what startTurn would have returned. */
  started?: StartedTurn;
}

export interface FinishTurn {
  turnId: string;
  status: 'done' | 'failed';
  messages: StoredMessage[];
  finishReason: string;
  error?: string;
  usage?: Record<string, unknown>;
  provider?: Record<string, unknown>;
  /** Claims the honesty check corrected. */
  honesty?: unknown[];
  /** The drain's lease: the turn is closed only while the conversation's lease is still this token (the fence), and released in the same statement when nothing else waits. */
  lease?: string;
}

/**
 * Turns and the drain's lease on a conversation. One drain at a time holds a
 * conversation's lease (a token with a deadline); only the holder opens,
 * resumes or closes its turns. Every method is one atomic step.
 */
export interface TurnRepository {
  /**
   * The inbox's accept(), and when that creates the conversation, also takes its lease and opens its
   * first turn claiming the message, in the same statement (one synchronous commit for both). A
   * conversation that existed is not leased and gets no turn: only the message is written, as accept() does.
   * Absent: accept() and the drain's startTurn do it in two statements.
   */
  acceptOpening?(msg: InboundMessage, agent: string, meta: AcceptMeta, open: OpenTurn): Promise<AcceptOpened>;
  /**
   * Takes (or renews) the lease for `lease`, but only when an unconsumed row
   * waits, no turn of the conversation is parked, and the lease is free,
   * already this token's, or expired. Holding it, resumes the running turn
   * that claimed the oldest claimed row (attempt + 1, this worker), or opens
   * turn seq max+1 claiming rows as the queue mode says (`auto`: collect none,
   * interrupt all, others the oldest one; `all`; with `none` nothing is
   * claimed or resumed). The mode is the conversation's own when it is a known
   * queue mode, else modes.byChannel[channel], else modes.default.
   * A turn comes with its batch (its rows, oldest first) and context: the
   * newest historyLimits[agent] (else [default]) messages after the summary,
   * oldest first (none when the batch's first row carries its own context),
   * the summary, and up to memoryLimit notes visible to the conversation and
   * the first row's sender, oldest first among the newest.
   * A row is never claimed by two turns: a racing drain comes back empty.
   */
  startTurn(b: StartTurn): Promise<StartedTurn>;
  /**
   * Closes a running turn atomically: status and finish fields, its messages
   * appended to the transcript in order, its rows consumed, its step journal
   * (ports/turn-journal.ts) deleted. Writes nothing
   * when the turn is not running (finished: false). Returns the
   * conversation's other unconsumed rows; when none wait, the lease `lease`
   * is released in the same step.
   */
  finishTurn(f: FinishTurn): Promise<{ finished: boolean; pending: InboxMessage[] }>;
  /** Parks a running turn with its loop state; false unless it was running (and, given `lease`, the conversation's lease is still it). The conversation waits while a turn is parked. */
  parkTurn(turnId: string, state: unknown, lease?: string): Promise<boolean>;
  /** Makes a parked turn running again; returns its conversation id, or undefined if it was not parked. */
  unparkTurn(turnId: string): Promise<string | undefined>;
  /**
   * Takes back what startTurn did for a turn that may not run yet, atomically:
   * an opened turn (attempt 1) is deleted and its rows unclaimed, a resumed
   * turn gets its attempt back, and the lease is released; all of it only while the lease is still
   * `lease` (a drain whose lease another one took changes nothing).
   */
  deferTurn(turnId: string, conversationId: string, lease: string): Promise<void>;
  /** Extends the lease by leaseMs from now, only while it is still `lease`; false otherwise. */
  renewLease(conversationId: string, lease: string, leaseMs: number): Promise<boolean>;
  /** Gives the lease up, only if it is still `lease` (a lost lease is left alone). */
  releaseLease(conversationId: string, lease: string): Promise<void>;
  turn(id: string): Promise<TurnRecord | undefined>;
  /** A conversation's turns by seq. */
  turns(conversationId: string): Promise<TurnRecord[]>;
}
