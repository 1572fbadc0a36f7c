import type { JournalFence, ModelStep, ToolStep, ToolStepResult, TurnJournal, TurnJournalRepository } from '../../../adapters/store/ports/turn-journal.js';
import { LeaseLostError } from '../../../kernel/lease-lost.js';
import { json, type Tables } from './tables.js';

/** The step journal in memory, fenced by the conversation's lease as the SQL statement is. */
export class MemoryJournal implements TurnJournalRepository {
  constructor(private readonly t: Tables) {}

  private write(fence: JournalFence, turnId: string, kind: 'model' | 'tool', key: string, status: string, entry: unknown, what: string, keepFinished = false) {
    const c = this.t.conversations.get(fence.conversationId);
    if (!c || c.leaseToken !== fence.lease || !c.leaseUntil || c.leaseUntil <= new Date())
      throw new LeaseLostError(`the lease on conversation ${fence.conversationId} is no longer this drain's: ${what} was not written`);
    const id = `${turnId} ${kind} ${key}`;
    const had = this.t.journal.get(id);
    if (had && keepFinished && had.status === 'finished') return;
    if (had) Object.assign(had, { status, entry: json(entry) });
    else this.t.journal.set(id, { turnId: turnId, kind, key, status, entry: json(entry) as Record<string, unknown> });
  }

  async recordModelStep(fence: JournalFence, s: ModelStep): Promise<void> {
    this.write(fence, s.turnId, 'model', String(s.index), 'finished', { message: s.message, attempts: s.attempts }, `model step ${s.index}`);
  }

  async recordToolStarted(fence: JournalFence, s: Omit<ToolStep, 'status' | 'result'>): Promise<void> {
    this.write(fence, s.turnId, 'tool', s.toolCallId, 'started', { tool: s.tool }, `tool call ${s.toolCallId} started`, true);
  }

  async recordToolFinished(fence: JournalFence, s: Omit<ToolStep, 'status' | 'result'> & { result: ToolStepResult }): Promise<void> {
    this.write(fence, s.turnId, 'tool', s.toolCallId, 'finished', { tool: s.tool, result: s.result }, `tool call ${s.toolCallId} finished`);
  }

  async turnJournal(turnId: string): Promise<TurnJournal> {
    const mine = [...this.t.journal.values()].filter((j) => j.turnId === turnId).map((j) => json(j));
    return {
      models: mine
        .filter((j) => j.kind === 'model')
        .map((j) => ({ turnId, index: Number(j.key), message: j.entry.message, attempts: (j.entry.attempts as unknown[]) ?? [] }))
        .sort((a, b) => a.index - b.index),
      tools: mine
        .filter((j) => j.kind === 'tool')
        .map((j) => ({
          turnId,
          toolCallId: j.key,
          tool: String(j.entry.tool),
          status: j.status === 'finished' ? ('finished' as const) : ('started' as const),
          ...(j.status === 'finished' ? { result: j.entry.result as ToolStepResult } : {}),
        })),
    };
  }
}
