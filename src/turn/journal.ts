import type { AgentToolResult } from '@mariozechner/pi-agent-core';
import type { AssistantMessage } from '@mariozechner/pi-ai';
import type { Logger } from 'pino';
import type { ModelStep, ToolStep, ToolStepResult } from '../../adapters/store/ports/index.js';
import { ignoreError } from '../../kernel/errors.js';
import type { TurnEventSink } from '../../kernel/turn-events.js';
import type { TraceEntry } from '../../moat/honesty.js';
import type { Attempt } from '../../providers/chain.js';
import type { ModelJournal } from '../agent-loop.js';
import type { TurnJob, TurnStore } from './ports.js';
import { faultPoint } from './test-fault.js';

/** What the model is told of a call that began before a restart and may have had its effect. */
export const UNCERTAIN_RESULT = 'This call may or may not have completed before a restart; check before repeating it.';

export type JournalStore = Pick<TurnStore, 'recordModelStep' | 'recordToolStarted' | 'recordToolFinished' | 'turnJournal'>;

/**
 * The step journal of one attempt of a turn: resume, not rerun. A retried attempt
 * (attempt > 1) reads what earlier attempts kept; the agent loop replays model
 * responses by index and the tools answer finished calls from it. New steps are
 * written under the drain's lease; a write that fails (lease lost, database gone)
 * is remembered in `failed` and the turn stops at once (the job is retried).
 * Without a lease (a test driving the turn alone) nothing is written.
 */
export class StepJournal {
  private readonly models = new Map<number, ModelStep>();
  private readonly tools = new Map<string, ToolStep>();
  private failure?: Error;
  /** This attempt's final text-only response, kept only if settling takes long (keepFinalAfter). */
  private final?: { index: number; message: AssistantMessage; attempts: Attempt[] };

  private constructor(
    private readonly store: JournalStore,
    private readonly job: TurnJob,
    private readonly sink: TurnEventSink,
    private readonly log: Logger,
  ) {}

  /** The journal of this attempt: empty on a first attempt (nothing can be there), read on a retry. */
  static async open(store: JournalStore, job: TurnJob, sink: TurnEventSink, log: Logger): Promise<StepJournal> {
    const j = new StepJournal(store, job, sink, log);
    if (job.turn.attempt > 1) {
      const kept = await store.turnJournal(job.turn.id);
      for (const m of kept.models) j.models.set(m.index, m);
      for (const t of kept.tools) j.tools.set(t.toolCallId, t);
      if (kept.models.length || kept.tools.length)
        log.info({ turn: job.turn.id, models: kept.models.length, tools: kept.tools.length }, 'resuming the turn from its journal');
    }
    return j;
  }

  /** Set once a journal write failed: nothing more of this attempt may happen. */
  failed(): Error | undefined {
    return this.failure;
  }

  /** The model side, for the agent loop: its calls are numbered on from firstCall. */
  forModels(firstCall: number): ModelJournal {
    return {
      firstCall,
      replayModel: (index) => this.replayModel(index),
      recordModel: (index, message, attempts) => this.recordModel(index, message, attempts),
      finalModel: (index, message, attempts) => {
        if (message.stopReason !== 'error' && message.stopReason !== 'aborted') this.final = { index, message, attempts };
      },
      failed: () => this.failed(),
    };
  }

  replayModel(index: number): { message: AssistantMessage; attempts: Attempt[] } | undefined {
    const m = this.models.get(index);
    return m && { message: structuredClone(m.message) as AssistantMessage, attempts: m.attempts as Attempt[] };
  }

  /** Keeps model response #index (one that asks for tools), before any of its calls runs. */
  recordModel(index: number, message: AssistantMessage, attempts: Attempt[]): Promise<void> {
    return this.write(() => this.store.recordModelStep(this.fence()!, { turnId: this.job.turn.id, index, message, attempts }));
  }

  /**
   * Journals the final text-only response if closing the turn has not finished within `ms` (the
   * honesty judge, a channel retrying a failing delivery): a worker dying before the close then
   * makes the retry replay the answer instead of asking the model again. The common, quick close
   * writes nothing (finishTurn stores the answer with the transcript). done() cancels the timer
   * and waits for a write that began (it must land before finishTurn deletes the journal).
   */
  keepFinalAfter(ms: number): { done(): Promise<void> } {
    let writing: Promise<void> | undefined;
    const timer = setTimeout(() => {
      writing = this.keepFinal().catch(ignoreError('logged by write(); the close is fenced on its own'));
    }, ms);
    return {
      done: async () => {
        clearTimeout(timer);
        await writing;
      },
    };
  }

  private async keepFinal(): Promise<void> {
    const f = this.final;
    if (!f || this.models.has(f.index)) return; // nothing new, or replayed from the journal already
    await this.recordModel(f.index, f.message, f.attempts);
    this.models.set(f.index, { turnId: this.job.turn.id, index: f.index, message: f.message, attempts: f.attempts });
    faultPoint('final-kept');
  }

  step(toolCallId: string): ToolStep | undefined {
    return this.tools.get(toolCallId);
  }

  /** The tools an earlier attempt called: a replayed call must find its tool even if it is not offered now. */
  toolNames(): string[] {
    return [...new Set([...this.tools.values()].map((t) => t.tool))];
  }

  /** Before a call runs (a call already started is not marked again). */
  async started(toolCallId: string, tool: string): Promise<void> {
    if (this.tools.has(toolCallId)) return;
    await this.write(() => this.store.recordToolStarted(this.fence()!, { turnId: this.job.turn.id, toolCallId, tool }));
    this.tools.set(toolCallId, { turnId: this.job.turn.id, toolCallId, tool, status: 'started' });
  }

  async finished(toolCallId: string, tool: string, result: ToolStepResult): Promise<void> {
    await this.write(() => this.store.recordToolFinished(this.fence()!, { turnId: this.job.turn.id, toolCallId, tool, result }));
    this.tools.set(toolCallId, { turnId: this.job.turn.id, toolCallId, tool, status: 'finished', result });
  }

  /**
   * A call that started before a restart and did not finish, and may not simply run
   * again: the model is told so (an error result, journaled as the call's result),
   * and so are the people in the conversation and the operator's log.
   */
  async uncertain(toolCallId: string, tool: string, args: unknown): Promise<ToolStepResult> {
    const trace: TraceEntry = { tool, args, ok: false, output: UNCERTAIN_RESULT };
    const result: ToolStepResult = { content: [{ type: 'text', text: UNCERTAIN_RESULT }], isError: true, trace };
    this.log.warn({ turn: this.job.turn.id, tool, toolCallId }, 'a tool call started before a restart and may or may not have completed; it is not run again');
    this.sink.push({
      type: 'notice',
      turnId: this.job.turn.id,
      text: `${tool} (call ${toolCallId}) may or may not have completed before a restart; it was not run again.`,
    });
    await this.finished(toolCallId, tool, result);
    return result;
  }

  private fence() {
    const lease = this.job.context.lease;
    return lease ? { conversationId: this.job.conversation.id, lease } : undefined;
  }

  private async write(w: () => Promise<void>): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.fence()) return;
    try {
      await w();
    } catch (err) {
      this.failure = err as Error;
      this.log.warn({ err, turn: this.job.turn.id }, 'a journal write failed: the turn stops here and is retried');
      throw err;
    }
  }
}

/** A journaled result as a tool result the loop hands on (afterToolCall gives the model exactly this). */
export function journaledResult(r: ToolStepResult): AgentToolResult<unknown> {
  return { content: r.content as AgentToolResult<unknown>['content'], details: null };
}
