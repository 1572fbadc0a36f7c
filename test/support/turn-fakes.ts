/**
 * In-memory ports and a scripted model for unit tests of the turn orchestrator
 * (src/turn/): the store, the approvals, a provider chain whose slots answer from
 * a script (the real FallbackChain over a scripted stream function, as
 * pi-agent-core's agent-loop tests script their stream), and a recording sink.
 */
import {
  type Api,
  type AssistantMessage,
  type AssistantMessageEventStream,
  type Context,
  createAssistantMessageEventStream,
  type Model,
  type ToolCall,
} from '@mariozechner/pi-ai';
import pino from 'pino';
import { z } from 'zod';
import { MemoryCooldowns } from '../../adapters/cooldowns/memory.js';
import type { ApprovalRecord, NewApproval } from '../../adapters/store/approvals.js';
import type {
  ConversationRecord,
  FinishTurn,
  InboxMessage,
  JournalFence,
  ModelStep,
  ToolStep,
  ToolStepResult,
  TurnJournal,
  TurnRecord,
} from '../../adapters/store/store.js';
import { LeaseLostError } from '../../kernel/lease-lost.js';
import type { TurnEvent } from '../../kernel/turn-events.js';
import type { AllowRule } from '../../moat/approval-engine.js';
import { FallbackChain } from '../../providers/chain.js';
import { type Config, configSchema } from '../../src/config.js';
import { PromptComposer } from '../../src/prompt.js';
import type { TurnApprovalStore, TurnApprovals, TurnDeps, TurnJob, TurnSink, TurnStore } from '../../src/turn/index.js';
import type { AnyTool, ToolDef } from '../../tools/contract.js';

export const silentLog = pino({ level: 'silent' });

// ---- the store ---------------------------------------------------------------------------

/** The turn's store port in memory: every call is recorded; a turn closes or parks once. */
export class MemoryTurnStore implements TurnStore {
  readonly finished: FinishTurn[] = [];
  readonly parked: Array<{ turnId: string; state: unknown }> = [];
  readonly summaries: Array<{ conversationId: string; uptoId: number; summary: string }> = [];
  readonly toolResults = new Map<string, { turnId: string; tool: string; content: string }>();
  /** Rows that arrive while a turn runs (steer mode claims them). */
  readonly arriving: InboxMessage[] = [];
  /** What finishTurn answers as the conversation's other waiting rows. */
  pendingAfter: InboxMessage[] = [];
  private readonly status = new Map<string, 'running' | 'parked' | 'done' | 'failed'>();
  /** The step journal, by turn: model steps by index, tool steps by call id. */
  readonly journal = new Map<string, { models: Map<number, ModelStep>; tools: Map<string, ToolStep> }>();
  /** Journal writes made (kind and key), in order. */
  readonly journalWrites: string[] = [];
  /** Set: every journal write fails as a lost lease does. */
  leaseLost = false;

  private journalOf(turnId: string) {
    let j = this.journal.get(turnId);
    if (!j) this.journal.set(turnId, (j = { models: new Map(), tools: new Map() }));
    return j;
  }

  private fenced(fence: JournalFence, what: string): void {
    if (this.leaseLost) throw new LeaseLostError(`the lease on conversation ${fence.conversationId} is no longer this drain's: ${what} was not written`);
    this.journalWrites.push(what);
  }

  async recordModelStep(fence: JournalFence, step: ModelStep): Promise<void> {
    this.fenced(fence, `model ${step.index}`);
    this.journalOf(step.turnId).models.set(step.index, structuredClone(step));
  }

  async recordToolStarted(fence: JournalFence, step: Omit<ToolStep, 'status' | 'result'>): Promise<void> {
    this.fenced(fence, `started ${step.toolCallId}`);
    const tools = this.journalOf(step.turnId).tools;
    if (tools.get(step.toolCallId)?.status !== 'finished') tools.set(step.toolCallId, { ...step, status: 'started' });
  }

  async recordToolFinished(fence: JournalFence, step: Omit<ToolStep, 'status' | 'result'> & { result: ToolStepResult }): Promise<void> {
    this.fenced(fence, `finished ${step.toolCallId}`);
    this.journalOf(step.turnId).tools.set(step.toolCallId, structuredClone({ ...step, status: 'finished' }));
  }

  async turnJournal(turnId: string): Promise<TurnJournal> {
    const j = this.journalOf(turnId);
    return structuredClone({ models: [...j.models.values()].sort((a, b) => a.index - b.index), tools: [...j.tools.values()] });
  }

  async finishTurn(f: FinishTurn): Promise<{ finished: boolean; pending: InboxMessage[] }> {
    if ((this.status.get(f.turnId) ?? 'running') !== 'running') return { finished: false, pending: [] };
    this.status.set(f.turnId, f.status);
    // The statement stores a JSON copy: later changes to the turn's objects do not reach it.
    this.finished.push(structuredClone(f));
    return { finished: true, pending: this.pendingAfter };
  }

  async parkTurn(turnId: string, state: unknown): Promise<boolean> {
    if ((this.status.get(turnId) ?? 'running') !== 'running') return false;
    this.status.set(turnId, 'parked');
    this.parked.push({ turnId, state: JSON.parse(JSON.stringify(state)) });
    return true;
  }

  /** What an answer does: the parked turn runs again (unparkTurn). */
  unpark(turnId: string): void {
    if (this.status.get(turnId) === 'parked') this.status.set(turnId, 'running');
  }

  async saveSummary(conversationId: string, uptoId: number, summary: string): Promise<boolean> {
    this.summaries.push({ conversationId, uptoId, summary });
    return true;
  }

  async claimInto(_turnId: string, _conversationId: string): Promise<InboxMessage[]> {
    return this.arriving.splice(0);
  }

  async waitingCount(_conversationKey: string): Promise<{ waiting: number; running: boolean; mode: string | null }> {
    return { waiting: this.arriving.length, running: true, mode: null };
  }

  async saveToolResult(turnId: string, tool: string, content: string): Promise<string> {
    const id = `tr_${this.toolResults.size + 1}`;
    this.toolResults.set(id, { turnId, tool, content });
    return id;
  }
}

// ---- approvals ---------------------------------------------------------------------------

/** The approval service and store ports in memory, with the operator's answer as decide(). */
export class MemoryApprovals implements TurnApprovals, TurnApprovalStore {
  readonly rows = new Map<string, ApprovalRecord>();
  readonly resumeChecks: string[] = [];
  rules: AllowRule[] = [];

  async request(a: Omit<NewApproval, 'expiresAt'>): Promise<ApprovalRecord> {
    // The same tool call asks again after a crash: the row is reused (as on conflict in SQL).
    const same = [...this.rows.values()].find((r) => r.turnId === a.turnId && r.toolCallId === a.toolCallId);
    if (same) return same;
    const n = this.rows.size + 1;
    const row: ApprovalRecord = {
      id: `ap_${n}`,
      code: `K7Q${n}P`,
      conversationId: a.conversationId,
      turnId: a.turnId,
      toolCallId: a.toolCallId,
      tool: a.tool,
      args: a.args,
      argsHash: a.argsHash,
      pattern: a.pattern,
      tier: a.tier,
      reasons: a.reasons,
      rulePermitted: a.rulePermitted,
      requester: a.requester,
      channel: a.channel,
      status: 'pending',
      always: false,
      decidedBy: null,
      decidedVia: null,
      decidedAt: null,
      expiresAt: new Date(Date.now() + 60_000),
      createdAt: new Date(),
    };
    this.rows.set(row.id, row);
    return row;
  }

  async resumeIfReady(turnId: string): Promise<void> {
    this.resumeChecks.push(turnId);
  }

  async supersede(turnId: string, keep: string[]): Promise<void> {
    for (const r of this.rows.values())
      if (r.turnId === turnId && r.status === 'pending' && !keep.includes(r.id)) Object.assign(r, { status: 'expired', decidedBy: 'superseded' });
  }

  decide(code: string, status: 'approved' | 'denied' | 'expired', by = 'slack:T1:UOPS'): ApprovalRecord {
    const row = [...this.rows.values()].find((r) => r.code === code);
    if (!row) throw new Error(`no approval ${code}`);
    Object.assign(row, { status, decidedBy: status === 'expired' ? null : by, decidedAt: new Date() });
    return row;
  }

  async get(id: string): Promise<ApprovalRecord | undefined> {
    const r = this.rows.get(id);
    return r && { ...r };
  }

  async markExecuted(id: string): Promise<boolean> {
    const r = this.rows.get(id);
    if (r?.status !== 'approved') return false;
    r.status = 'executed';
    return true;
  }

  async rulesFor(): Promise<AllowRule[]> {
    return this.rules;
  }
}

// ---- the scripted model ------------------------------------------------------------------

/** One model answer: text, tool calls, or a failure (optionally after some streamed text). */
export type Step =
  | { text: string }
  | { toolCalls: Array<{ name: string; args: Record<string, unknown>; id?: string }>; text?: string }
  | { fail: string; afterText?: string }
  /** Streams `text`, then waits until the call is aborted. */
  | { hang: string };

const ZERO = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

export function fakeModel(id: string): Model<Api> {
  return {
    id,
    name: id,
    api: 'openai-completions',
    provider: 'scripted',
    baseUrl: 'http://scripted.invalid',
    reasoning: false,
    input: ['text'],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 100_000,
    maxTokens: 1000,
  } as Model<Api>;
}

/**
 * Slots that answer from a script, one step per model call, through the real fallback
 * chain. `calls` records what each call was sent (slot and context).
 */
export class ScriptedModel {
  readonly calls: Array<{ slot: string; messages: Context['messages'] }> = [];
  private readonly steps = new Map<string, Step[]>();
  private seq = 0;

  constructor(script: Record<string, Step[]>) {
    for (const [slot, steps] of Object.entries(script)) this.steps.set(slot, [...steps]);
  }

  chain(): FallbackChain {
    const settings = { ...configSchema.parse({}).fallback, busyRetryMs: 0 };
    return new FallbackChain(
      [...this.steps.keys()].map((id) => ({ id, model: fakeModel(id), apiKey: 'k' })),
      new MemoryCooldowns(),
      settings,
      ((model: Model<Api>, context: Context, options?: { signal?: AbortSignal }) => this.stream(model.id, context, options?.signal)) as never,
    );
  }

  /** Every text the model was sent, in order (user and tool results), flattened. */
  sentTexts(call: number): string[] {
    return this.calls[call]!.messages.map((m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => ('text' in p ? p.text : '')).join('')));
  }

  private stream(slot: string, context: Context, signal?: AbortSignal): AssistantMessageEventStream {
    this.calls.push({ slot, messages: structuredClone(context.messages) });
    const out = createAssistantMessageEventStream();
    const step = this.steps.get(slot)?.shift() ?? { fail: `500 the script of ${slot} has no more answers` };
    const base = (): AssistantMessage => ({
      role: 'assistant',
      content: [],
      api: 'openai-completions',
      provider: 'scripted',
      model: slot,
      usage: { ...ZERO, input: 10, output: 5, totalTokens: 15 },
      stopReason: 'stop',
      timestamp: Date.now(),
    });
    const msg = base();
    const text = (t: string) => {
      const i = msg.content.length;
      msg.content.push({ type: 'text', text: '' });
      out.push({ type: 'text_start', contentIndex: i, partial: msg });
      (msg.content[i] as { text: string }).text = t;
      out.push({ type: 'text_delta', contentIndex: i, delta: t, partial: msg });
      out.push({ type: 'text_end', contentIndex: i, content: t, partial: msg });
    };
    queueMicrotask(() => {
      out.push({ type: 'start', partial: msg });
      if ('hang' in step) {
        text(step.hang);
        const stop = () => out.push({ type: 'error', reason: 'aborted', error: { ...msg, stopReason: 'aborted', errorMessage: 'Request was aborted.' } });
        if (signal?.aborted) stop();
        else signal?.addEventListener('abort', stop, { once: true });
        return;
      }
      if ('fail' in step) {
        if (step.afterText) text(step.afterText);
        out.push({ type: 'error', reason: 'error', error: { ...msg, stopReason: 'error', errorMessage: step.fail } });
        return;
      }
      if ('toolCalls' in step) {
        if (step.text) text(step.text);
        for (const c of step.toolCalls) {
          const call: ToolCall = { type: 'toolCall', id: c.id ?? `call_${++this.seq}`, name: c.name, arguments: c.args };
          const i = msg.content.length;
          msg.content.push(call);
          out.push({ type: 'toolcall_start', contentIndex: i, partial: msg });
          out.push({ type: 'toolcall_end', contentIndex: i, toolCall: call, partial: msg });
        }
        msg.stopReason = 'toolUse';
        out.push({ type: 'done', reason: 'toolUse', message: msg });
        return;
      }
      text(step.text);
      out.push({ type: 'done', reason: 'stop', message: msg });
    });
    return out;
  }
}

// ---- tools, rows, deps, sink -------------------------------------------------------------

/** A tool that counts its runs; its effect decides whether it asks (external_send) or runs (read). */
export function countingTool(name: string, effect: 'read' | 'external_send', answer = (args: { to?: string }) => `done for ${args.to ?? 'nobody'}`) {
  const runs: unknown[] = [];
  const tool: ToolDef = {
    name,
    description: `${name} (a test tool)`,
    schema: z.object({ to: z.string().optional() }),
    effect,
    execute: async (args: { to?: string }) => {
      runs.push(args);
      return answer(args);
    },
  };
  return { tool: tool as AnyTool, runs };
}

export function conversation(over: Partial<ConversationRecord> = {}): ConversationRecord {
  return { id: 'c_1', key: 'slack:T1:C1', channel: 'slack', owner: null, agent: 'default', queueMode: null, createdAt: new Date(), ...over };
}

let inboxSeq = 0;
export function inboxRow(text: string, over: Partial<InboxMessage> = {}): InboxMessage {
  const id = ++inboxSeq;
  return {
    id,
    conversationId: 'c_1',
    channel: 'slack',
    externalId: `ev_${id}`,
    sender: { id: 'U1', workspace: 'T1' },
    senderIdentity: 'slack:T1:U1',
    text,
    attachments: [],
    replyTo: null,
    context: null,
    receivedAt: new Date(),
    turnId: 't_1',
    consumedAt: null,
    ...over,
  };
}

export function turnRow(over: Partial<TurnRecord> = {}): TurnRecord {
  return {
    id: 't_1',
    conversationId: 'c_1',
    seq: 1,
    status: 'running',
    state: null,
    honesty: null,
    attempt: 1,
    worker: 'w',
    startedAt: new Date(),
    finishedAt: null,
    finishReason: null,
    error: null,
    usage: null,
    provider: null,
    ...over,
  };
}

export function job(
  text: string,
  over: { turn?: Partial<TurnRecord>; conversation?: Partial<ConversationRecord>; history?: TurnJob['context']['history'] } = {},
): TurnJob {
  return {
    conversation: conversation(over.conversation),
    turn: turnRow(over.turn),
    batch: [inboxRow(text)],
    context: { history: over.history ?? [], memory: [], lease: 'lease-1' },
  };
}

export function testConfig(over: Record<string, unknown> = {}): Config {
  return configSchema.parse({ dataDir: '/tmp/switchboard-turn-unit', ...over });
}

export interface Fakes {
  store: MemoryTurnStore;
  approvals: MemoryApprovals;
}

export function turnDeps(o: { model?: ScriptedModel | null; tools?: AnyTool[]; config?: Record<string, unknown> } = {}): TurnDeps & Fakes {
  const store = new MemoryTurnStore();
  const approvals = new MemoryApprovals();
  return {
    store,
    approvals,
    approvalStore: approvals,
    chain: o.model ? o.model.chain() : null,
    judgeCooldowns: new MemoryCooldowns(),
    prompts: new PromptComposer(),
    config: testConfig(o.config),
    tools: () => o.tools ?? [],
    log: silentLog,
  };
}

/** A sink that keeps every event, and counts flushes (with the events seen when each began). */
export class RecordingSink implements TurnSink {
  readonly events: TurnEvent[] = [];
  readonly flushes: number[] = [];
  attempt?: TurnSink['attempt'];
  push(e: TurnEvent): void {
    this.events.push(e);
  }
  async flush(): Promise<void> {
    this.flushes.push(this.events.length);
  }
  types(): string[] {
    return this.events.map((e) => e.type);
  }
  of<T extends TurnEvent['type']>(type: T): Array<Extract<TurnEvent, { type: T }>> {
    return this.events.filter((e): e is Extract<TurnEvent, { type: T }> => e.type === type);
  }
  /** The reply as a channel would show it: deltas added up, a reset withdraws what came before. */
  shownText(): string {
    let t = '';
    for (const e of this.events) {
      if (e.type === 'text_delta') t += e.delta;
      if (e.type === 'reset') t = '';
    }
    return t;
  }
}
