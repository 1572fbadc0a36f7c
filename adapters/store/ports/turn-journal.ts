/**
 * The step journal of a turn: what its attempts already did, so that a retried
 * attempt replays it instead of asking the model again and running its tools twice.
 */

/** A journal write counts only while the conversation's lease is held by this drain's token. */
export interface JournalFence {
  conversationId: string;
  lease: string;
}

/** A model response that asked for tools, kept before any of them runs. */
export interface ModelStep {
  turnId: string;
  /** The model call's index in the turn: 0, 1, ... (a parked turn's calls continue its numbering). */
  index: number;
  /** The complete AssistantMessage the loop got (its usage included). */
  message: unknown;
  /** The provider attempts of this call (slot, outcome), for the turn's ledger. */
  attempts: unknown[];
}

/** What the model was given for a finished tool call. */
export interface ToolStepResult {
  /** The tool result's content parts, as the model saw them (redacted, capped, marked untrusted). */
  content: unknown[];
  isError: boolean;
  /** The entry of the honesty check's trace for this call. */
  trace: unknown;
}

/** A tool call: `started` before it runs, `finished` with its result. */
export interface ToolStep {
  turnId: string;
  toolCallId: string;
  tool: string;
  status: 'started' | 'finished';
  /** Set when finished. */
  result?: ToolStepResult;
}

/** A turn's journal as a retried attempt reads it. */
export interface TurnJournal {
  models: ModelStep[];
  tools: ToolStep[];
}

/**
 * The step journal, one repository. Every write is fenced: it succeeds only
 * while `fence.lease` holds the conversation's lease (an unexpired one), in
 * the same statement; otherwise it writes nothing and throws LeaseLostError
 * (kernel/lease-lost.ts, code 'lease_lost', retryable). Writes are idempotent
 * per key (a rerun that writes the same step again changes nothing but the
 * step's status and entry). Closing the turn (TurnRepository.finishTurn)
 * deletes its journal.
 */
export interface TurnJournalRepository {
  /** Keeps model response #index of the turn. */
  recordModelStep(fence: JournalFence, step: ModelStep): Promise<void>;
  /** Marks a tool call started (before it runs); a call already finished stays finished. */
  recordToolStarted(fence: JournalFence, step: Omit<ToolStep, 'status' | 'result'>): Promise<void>;
  /** Marks a tool call finished with what the model was given. */
  recordToolFinished(fence: JournalFence, step: Omit<ToolStep, 'status' | 'result'> & { result: ToolStepResult }): Promise<void>;
  /** The turn's journal: model steps by index, tool steps in the order they started. */
  turnJournal(turnId: string): Promise<TurnJournal>;
}
