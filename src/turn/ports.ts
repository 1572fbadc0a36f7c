import type { Logger } from 'pino';
import type {
  ApprovalRecord,
  ConversationRecord,
  FinishTurn,
  InboxMessage,
  NewApproval,
  StoredMessage,
  TurnJournalRepository,
  TurnRecord,
} from '../../adapters/store/ports/index.js';
import type { AllowRule } from '../../kernel/allow-rule.js';
import type { CooldownStore } from '../../kernel/cooldowns.js';
import type { TurnEventSink } from '../../kernel/turn-events.js';
import type { Attempt, ProviderChain } from '../../providers/chain.js';
import type { AnyTool } from '../../tools/contract.js';
import type { Config } from '../config.js';
import type { PromptComposer } from '../prompt.js';
import type { TurnTrace } from '../telemetry/genai.js';
import type { LeaseGuard } from './lease-guard.js';

/**
 * The narrow ports a turn needs: exactly the methods of Store, ApprovalStore and
 * ApprovalService it calls (the real classes satisfy them; the unit tests use the
 * in-memory ones of test/support/turn-fakes.ts). The row types come from the store
 * here only, so the rest of src/turn/ does not import the adapters.
 */
export type { ApprovalRecord, ConversationRecord, InboxMessage, StoredMessage, TurnRecord };
export interface TurnStore extends Pick<TurnJournalRepository, 'recordModelStep' | 'recordToolStarted' | 'recordToolFinished' | 'turnJournal'> {
  /** Closes the turn with its transcript in one statement; `pending` are the conversation's other waiting rows. */
  finishTurn(f: FinishTurn): Promise<{ finished: boolean; pending: InboxMessage[] }>;
  /** Keeps the loop state of a turn that waits for approvals; false when the turn was not running (or `lease` is no longer the conversation's). */
  parkTurn(turnId: string, state: unknown, lease?: string): Promise<boolean>;
  saveSummary(conversationId: string, uptoId: number, summary: string): Promise<boolean>;
  /** steer: claims the rows that arrived meanwhile into the running turn. */
  claimInto(turnId: string, conversationId: string): Promise<InboxMessage[]>;
  /** `handoff`: the conversation's open handoff (src/handoffs/), when the store knows. */
  waitingCount(
    conversationKey: string,
  ): Promise<{ waiting: number; running: boolean; mode: string | null; handoff?: { id: string; state: 'requested' | 'taken' } | null }>;
  /** Keeps a tool output too long to show whole; returns the id the model pages it with. */
  saveToolResult(turnId: string, tool: string, content: string): Promise<string>;
}

export interface TurnApprovalStore {
  get(id: string): Promise<ApprovalRecord | undefined>;
  /** Claims an approved call for execution, once. */
  markExecuted(id: string): Promise<boolean>;
  rulesFor(conversationId: string, sender: string): Promise<AllowRule[]>;
}

export interface TurnApprovals {
  request(a: Omit<NewApproval, 'expiresAt'>): Promise<ApprovalRecord>;
  /** Expires the turn's pending approvals other than these (left by an attempt that failed after asking). */
  supersede(turnId: string, keep: string[]): Promise<void>;
  /** Unparks the turn when none of its approvals is pending any more (answered before it parked). */
  resumeIfReady(turnId: string): Promise<void>;
}

export interface TurnDeps {
  store: TurnStore;
  chain: ProviderChain | null;
  /** The chain that writes summaries (compaction.summarizerSlot first); the main chain when unset. */
  summarizer?: ProviderChain | null;
  /** Cooldowns of the honesty judge's slots (moat.honesty.judgeSlot), in process: apart from the chain's shared ones. */
  judgeCooldowns: CooldownStore;
  prompts: PromptComposer;
  config: Config;
  approvals: TurnApprovals;
  approvalStore: TurnApprovalStore;
  /** Every tool this conversation may use (built-ins and MCP), before the planner narrows them. */
  tools: () => AnyTool[];
  log: Logger;
}

/** What the turn starts from: the transcript window and memory notes (loaded with the turn row). */
export interface TurnContext {
  history: StoredMessage[];
  /** Message ids of history, for recording how far a compaction reached. */
  historyIds?: number[];
  /** The running summary of what history no longer shows. */
  summary?: string | null;
  memory: string[];
  /** The drain's lease, given up when the turn closes with nothing else waiting. */
  lease?: string;
}

/** One turn to run: the opened (or resumed) turn row, the inbox rows it answers, and what it starts from. */
export interface TurnJob {
  conversation: ConversationRecord;
  turn: TurnRecord;
  batch: InboxMessage[];
  context: TurnContext;
  /**
   * The drain's lease, as the worker knows it: asked before each model call and
   * tool call (and by the worker's sink gate before each event); once lost, its
   * signal has aborted the turn and the turn writes nothing more.
   */
  leaseGuard?: LeaseGuard;
  /** The turn's span context: its model and tool calls are traced as its children (src/telemetry/genai.ts). */
  trace?: TurnTrace;
}

/**
 * The turn's one sink. Provider attempts are not turn events (nobody is shown them) but the
 * metrics count them as they happen, so a sink may take them too.
 */
export interface TurnSink extends TurnEventSink {
  attempt?(a: Attempt): void;
}

/** What a turn returns: the conversation's other waiting rows, or null (parked, or closed by another attempt). */
export type TurnOutcome = InboxMessage[] | null;
