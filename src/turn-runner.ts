import type { AgentToolResult } from '@mariozechner/pi-agent-core';
import type { AssistantMessage, Message, ToolResultMessage, UserMessage } from '@mariozechner/pi-ai';
import type { Logger } from 'pino';
import type { ApprovalStore } from '../adapters/store/approvals.js';
import { senderIdentity, type ConversationRow, type InboxRow, type Store, type StoredMessage, type TurnRow } from '../adapters/store/store.js';
import type { ClaimFinding, TraceEntry } from '../moat/honesty.js';
import { checkTurnClaims } from './honesty-judge.js';
import { planTools } from '../moat/planner.js';
import { Redactor } from '../moat/secrets.js';
import type { Attempt, ProviderChain } from '../providers/chain.js';
import { schemaCharsOf, type AnyTool } from '../tools/contract.js';
import { workspaceFor } from '../tools/workspace.js';
import { runAgent } from './agent-loop.js';
import { estimateTokens, InTurnCompactor, safeCut, summarize } from './compaction.js';
import { queueModeFor } from '../kernel/queue-modes.js';
import type { ApprovalService } from './approvals/service.js';
import type { Config } from './config.js';
import type { TurnEvent, TurnProvider, TurnUsage } from '../kernel/turn-events.js';
import type { PromptComposer } from './prompt.js';
import { findSecrets, markAuthor, refusalText, userRefusal, type SystemPart } from './provider-request.js';
import type { Metrics } from './metrics.js';
import { TurnTools, type ParkedCall } from './turn-tools.js';

export const NO_PROVIDER_REPLY =
  'No model provider is configured on this gateway, so I cannot answer yet. ' +
  'An operator needs to set ANTHROPIC_API_KEY, OPENAI_API_KEY, or OPENAI_BASE_URL with SWITCHBOARD_MODEL.';

export interface TurnDeps {
  store: Store;
  chain: ProviderChain | null;
  /** The chain that writes summaries (compaction.summarizerSlot first); the main chain when unset. */
  summarizer?: ProviderChain | null;
  prompts: PromptComposer;
  config: Config;
  approvals: ApprovalService;
  approvalStore: ApprovalStore;
  /** Every tool this conversation may use (built-ins and MCP), before the planner narrows them. */
  tools: () => AnyTool[];
  log: Logger;
  metrics?: Metrics;
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

/** A parked turn's loop state, kept on its row until its approvals are decided. */
interface ParkedState {
  /** This turn's messages after its prompts so far, without the placeholders of waiting calls. */
  messages: Message[];
  pending: ParkedCall[];
  trace: TraceEntry[];
  text: string;
  usage: TurnUsage;
  attempts: Attempt[];
}

/**
 * Runs one turn to its end and closes its row; returns the conversation's other
 * waiting inbox rows (null when the turn parked, or another attempt closed it).
 * Everything the user sees goes out through `emit`; the transcript is written
 * once, atomically, at the end, so a turn that dies midway is simply run again.
 */
export async function runTurn(
  deps: TurnDeps,
  conv: ConversationRow,
  turn: TurnRow,
  batch: InboxRow[],
  context: TurnContext,
  emit: (e: TurnEvent) => void,
  signal?: AbortSignal,
  /** Delivers what the channel has buffered; awaited before the turn is closed or parked. */
  flush: () => Promise<void> = async () => {},
): Promise<InboxRow[] | null> {
  const turnId = turn.id;
  const started = performance.now();
  let firstText = true;
  const m = deps.metrics;
  const outer = emit;
  emit = (e) => {
    if (m && e.type === 'text_delta' && firstText) {
      firstText = false;
      m.firstTokenSeconds.observe({ channel: conv.channel }, (performance.now() - started) / 1000);
    }
    if (m && e.type === 'done') {
      m.turns.inc({ channel: conv.channel, finish_reason: e.finishReason });
      if (e.finishReason !== 'approval_pending') m.turnSeconds.observe({ channel: conv.channel }, (performance.now() - started) / 1000);
      if (e.provider?.fallbackActivated && e.provider.slot) m.fallbacks.inc({ slot: e.provider.slot });
    }
    if (m && e.type === 'approval_requested') m.approvalsRequested.inc({ tier: e.approval.tier });
    outer(e);
  };
  emit({ type: 'turn_start', turnId, conversationId: conv.id, inboxIds: batch.map((r) => r.id), attempt: turn.attempt });
  const agent = (Object.hasOwn(deps.config.agents, conv.agent) ? deps.config.agents[conv.agent] : undefined) ?? deps.config.agents.default!;
  const prompts = batch.map(toUserMessage);
  const oneOff = batch[0]?.context ?? null;
  // Who the turn answers: a canonical identity (channel and id as a whole, kernel/identity.ts), for memory, search, rules and approvals.
  const sender = senderIdentity(batch[0]!);

  if (!deps.chain) {
    emit({ type: 'text_delta', turnId, delta: NO_PROVIDER_REPLY });
    await flush();
    const usage = { input: 0, output: 0, totalTokens: 0, cost: 0 };
    const closed = await deps.store.finishTurn({ turnId, status: 'done', messages: prompts as StoredMessage[], finishReason: 'no_provider', usage, lease: context.lease });
    if (closed.finished) emit({ type: 'done', turnId, text: NO_PROVIDER_REPLY, finishReason: 'no_provider', usage });
    return closed.finished ? closed.pending : null;
  }
  const chain = deps.chain;
  const parked = isParkedState(turn.state) ? turn.state : null;

  const contextMessages = oneOff ? contextToMessages(oneOff, chain) : { messages: [] as Message[], system: [] as string[] };
  let history = context.history as unknown as Message[];
  let summary = context.summary ?? null;
  const systemParts = deps.prompts.parts({ channel: conv.channel, agent, memory: context.memory, extraSystem: contextMessages.system });

  // The moat around the model: every request of the turn (model calls, summaries, the honesty judge) goes
  // through src/provider-request.ts with this Redactor: secrets reach the provider as stable placeholders.
  const redactor = new Redactor();
  const secrets = { redactor, policy: deps.config.moat.secrets };

  // Secret policy "block": a request carrying a secret never reaches the model. Asked here, before
  // compaction, for the whole turn; the request builder refuses any later call the same way.
  if (secrets.policy === 'block' && !parked) {
    const mine = findSecrets({ system: systemParts.filter((p) => p.from === 'user'), messages: [...contextMessages.messages, ...prompts] }, redactor);
    const parts = mine ? null : findSecrets({ system: systemParts.filter((p) => p.from !== 'user'), messages: [] }, redactor);
    const earlier = mine ? null : findSecrets({ messages: history }, redactor);
    if (mine || parts || earlier) {
      const refusal = mine
        ? userRefusal(mine.kinds)
        : refusalText({ kinds: [...new Set([...(parts?.kinds ?? []), ...(earlier?.kinds ?? [])])], where: [...(parts?.where ?? []), ...(earlier ? ['earlier messages of this conversation'] : [])], fromUser: false });
      emit({ type: 'text_delta', turnId, delta: refusal });
      await flush();
      const usage = { input: 0, output: 0, totalTokens: 0, cost: 0 };
      const closed = await deps.store.finishTurn({ turnId, status: 'done', messages: [], finishReason: 'blocked_secret', usage, lease: context.lease });
      if (closed.finished) emit({ type: 'done', turnId, text: refusal, finishReason: 'blocked_secret', usage });
      return closed.finished ? closed.pending : null;
    }
  }
  const window = chain.primary.contextWindow;
  const compaction = deps.config.compaction;

  // Compaction at the start of the turn: the oldest part of the history becomes the running summary.
  const baseSystem = systemParts.map((p) => p.text).join('\n\n');
  if (!parked && estimateTokens([...history, ...contextMessages.messages, ...prompts], baseSystem) > compaction.threshold * window) {
    const n = safeCut(history, Math.floor(compaction.keepRecent * window));
    const upto = context.historyIds?.[n - 1];
    if (n > 0 && upto !== undefined) {
      const s = await summarize(deps.summarizer ?? chain, history.slice(0, n), summary, signal, secrets);
      if (s) {
        await deps.store.saveSummary(conv.id, upto, s);
        summary = s;
        history = history.slice(n);
        deps.log.info({ conversation: conv.id, summarized: n }, 'compacted the conversation');
      } else deps.log.warn({ conversation: conv.id }, 'the summarizer failed; the transcript is kept and compaction retried later');
    }
  }
  const summaryPart: SystemPart[] = summary ? [{ text: `Summary of the earlier conversation (older messages are not shown):\n${summary}`, label: 'conversation summary', from: 'model' }] : [];
  const systemPrompt = summary ? `${baseSystem}\n\n${summaryPart[0]!.text}` : baseSystem;
  // ...and between model calls inside the turn (long tool loops), or when a provider says the context overflowed.
  const compactor = new InTurnCompactor(deps.summarizer ?? chain, window, compaction, null, (info) => deps.log.info({ turn: turnId, ...info }, 'compacted inside the turn'), secrets);

  // Tools: the planner offers only those the request needs (the full set when unsure).
  const all = deps.tools();
  let offered = all;
  if (deps.config.tools.planner && all.length) {
    const plan = planTools(
      prompts.map((p) => (typeof p.content === 'string' ? p.content : '')).join('\n'),
      all.map((t) => ({ name: t.name, description: t.description, ...(t.toolset ? { toolset: t.toolset } : {}), schemaChars: schemaCharsOf(t) })),
    );
    // A resumed turn keeps every tool its parked calls may need.
    const keep = new Set([...plan.tools, ...(parked?.pending.map((p) => p.tool) ?? [])]);
    offered = all.filter((t) => keep.has(t.name));
    deps.log.debug({ turn: turnId, tools: plan.tools, fellBack: plan.fellBack, promptCharsSaved: plan.promptCharsSaved }, 'planner guard');
  }
  const tools = new TurnTools({
    tools: offered,
    ctx: {
      conversationId: conv.id,
      turnId,
      senderId: sender,
      workspace: workspaceFor(deps.config.dataDir, conv.id),
      signal: signal ?? new AbortController().signal,
      evidence: () => ({
        userMessages: [...(context.history as unknown as Message[]), ...contextMessages.messages, ...prompts].filter((m) => m.role === 'user').map(messageText),
        toolOutputs: tools.trace.filter((t) => t.ok).map((t) => t.output ?? ''),
      }),
    },
    // Operator rules are read when a call first needs a decision, not on every turn.
    policy: { autonomy: deps.config.approvals.autonomy, rules: () => deps.approvalStore.rulesFor(conv.id, sender) },
    redactor,
    store: deps.store,
    approvals: deps.approvals,
    requester: sender,
    channel: conv.channel,
    outputCapBytes: deps.config.tools.outputCapBytes,
    log: deps.log,
  });
  if (parked) tools.trace.push(...parked.trace);

  // steer: messages that arrive meanwhile join this turn at its next model call, and
  // tool calls not started yet are skipped so the new message is heard first.
  const steering = queueModeFor(deps.config.conversations, conv.channel, conv.queue_mode) === 'steer';
  const beforeToolCall: typeof tools.beforeToolCall = async (c) => {
    if (steering && (await deps.store.waitingCount(conv.key)).waiting > 0) {
      return { block: true, reason: 'Skipped: the user sent a new message, which comes first. Call it again if it is still needed.' };
    }
    return tools.beforeToolCall(c);
  };
  const getSteeringMessages = steering
    ? async (): Promise<Message[]> => {
        const rows = await deps.store.claimInto(turnId, conv.id);
        if (!rows.length) return [];
        emit({ type: 'turn_start', turnId, conversationId: conv.id, inboxIds: rows.map((r) => r.id), attempt: turn.attempt });
        return rows.map(toUserMessage);
      }
    : undefined;

  // Resuming a parked turn: the decided calls get their results first.
  let resumed: Message[] | undefined;
  if (parked) resumed = [...parked.messages, ...(await decidedResults(deps, tools, parked.pending, turnId, emit))];

  const attempts: Attempt[] = [...(parked?.attempts ?? [])];
  let slot: string | undefined;
  const result = await runAgent(
    {
      systemPrompt: [...systemParts, ...summaryPart],
      history: [...sanitizeHistory(history), ...contextMessages.messages],
      prompts,
      tools: tools.agentTools(),
      chain,
      maxIterations: agent.maxIterations,
      ...(agent.maxTokens ? { maxTokens: agent.maxTokens } : {}),
      ...(agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
      ...(signal ? { signal } : {}),
      sessionId: conv.id,
      ...(resumed ? { resumed } : {}),
      beforeToolCall,
      afterToolCall: tools.afterToolCall,
      ...(getSteeringMessages ? { getSteeringMessages } : {}),
      stopWhen: () => tools.parked.length > 0,
      secrets,
      transformContext: (messages, sig) => compactor.transform(messages, systemPrompt, sig),
      budget: { tokens: deps.config.limits.turnTokens, costUsd: deps.config.limits.turnCostUsd, ...(parked ? { spent: parked.usage } : {}) },
    },
    {
      onText: (delta) => emit({ type: 'text_delta', turnId, delta }),
      onToolStart: (e) => emit({ type: 'tool_start', turnId, ...e }),
      onToolEnd: (e) => emit({ type: 'tool_end', turnId, ...e }),
      onReset: (reason) => emit({ type: 'reset', turnId, reason }),
      onNotice: (text) => emit({ type: 'notice', turnId, text }),
      onContextOverflow: async (ctx) => {
        const messages = await compactor.transform(ctx.messages, systemPrompt, signal, true);
        return messages.length < ctx.messages.length ? { ...ctx, messages } : null;
      },
      onAttempt: (a) => {
        attempts.push(a);
        deps.metrics?.providerAttempts.inc({ slot: a.slot, outcome: a.error });
        if (a.error === 'ok') slot = a.slot;
      },
    },
  );
  const usage = addUsage(parked?.usage, result.usage);
  let text = parked?.text ? (result.text ? `${parked.text}\n\n${result.text}` : parked.text) : result.text;
  const provider: TurnProvider = { slot: slot ?? null, fallbackActivated: slot !== undefined && slot !== chain.slots[0]!.id, attempts };
  const kept = result.newMessages.filter(
    (m) =>
      !(m.role === 'assistant' && (m.stopReason === 'error' || m.stopReason === 'aborted')) &&
      // A message that joined the turn (steer) and was refused for a secret is not kept either.
      !(result.finishReason === 'blocked_secret' && m.role === 'user' && findSecrets({ messages: [m] }, redactor)),
  );

  if (tools.parked.length) {
    // Park: persist the loop state, free the worker; the decision resumes it.
    const waiting = new Set(tools.parked.map((p) => p.toolCallId));
    const state: ParkedState = {
      messages: [...(resumed ?? []), ...kept].filter((m) => !(m.role === 'toolResult' && waiting.has(m.toolCallId))),
      pending: tools.parked,
      trace: tools.trace,
      text,
      usage,
      attempts,
    };
    // Show the request first (a crash after this re-runs the turn, which asks again: the
    // approval row for the same tool call is reused), then park.
    const approvals = tools.requested.map((a) => ({ code: a.code, tool: a.tool, tier: a.tier, expiresAt: new Date(a.expires_at).toISOString(), args: a.args, reasons: a.reasons, alwaysPermitted: a.rule_permitted }));
    // Structured only: each channel renders the request (buttons, codes, a prompt) from the event.
    for (const a of approvals) emit({ type: 'approval_requested', turnId, approval: a });
    await flush();
    if (!(await deps.store.parkTurn(turnId, state))) return null;
    await deps.approvals.resumeIfReady(turnId); // answered before we parked?
    emit({ type: 'done', turnId, text, finishReason: 'approval_pending', usage, provider, approvals });
    return null;
  }

  let finishReason = result.finishReason;
  let honesty: ClaimFinding[] = [];
  if (result.finishReason === 'error') {
    // Withdraw any partial answer and say plainly what went wrong.
    if (result.text) emit({ type: 'reset', turnId, reason: 'provider error' });
    text = `Sorry, I could not get an answer from the model provider. ${result.error}. Please try again.`;
    emit({ type: 'text_delta', turnId, delta: text });
  } else {
    if (result.finishReason === 'budget') {
      const note = `\n\n(Stopped: this turn reached its budget${deps.config.limits.turnTokens ? ` of ${deps.config.limits.turnTokens} tokens` : ''}${deps.config.limits.turnCostUsd ? ` or $${deps.config.limits.turnCostUsd}` : ''}.)`;
      text += note;
      emit({ type: 'text_delta', turnId, delta: note });
    }
    if (result.finishReason === 'aborted') {
      const note = '\n\n(Stopped.)';
      text += note;
      emit({ type: 'text_delta', turnId, delta: note });
    }
    if (result.finishReason === 'blocked_secret' && result.blocked) {
      // A later model call of the turn was refused (policy block): say why, as a refused message is told.
      const note = (text ? '\n\n' : '') + refusalText(result.blocked);
      text += note;
      emit({ type: 'text_delta', turnId, delta: note });
    }
    if (result.finishReason === 'turn_cap') {
      const note = `\n\n(Stopped after ${agent.maxIterations} model calls in one turn.)`;
      text += note;
      emit({ type: 'text_delta', turnId, delta: note });
    }
    // The honesty check: claims of action must match this turn's tool trace.
    const check = await checkTurnClaims(deps, result.text, tools.trace, redactor, signal);
    honesty = check.findings;
    if (honesty.length) {
      const corrections = '\n\n' + honesty.map((f) => `[Correction: ${f.correction ?? f.reason}]`).join('\n');
      text += corrections;
      emit({ type: 'text_delta', turnId, delta: corrections });
      appendText(kept, corrections);
    }
  }
  if (provider.fallbackActivated && deps.config.fallback.notice) emit({ type: 'notice', turnId, text: `(answered by the fallback model ${slot})` });

  const stored = [...contextMessages.messages, ...prompts, ...(resumed ?? []), ...kept] as StoredMessage[];
  await flush();
  const closed = await deps.store.finishTurn({
    turnId,
    status: finishReason === 'error' ? 'failed' : 'done',
    messages: stored,
    finishReason,
    ...(result.error ? { error: result.error } : {}),
    usage: usage as unknown as Record<string, unknown>,
    provider: provider as unknown as Record<string, unknown>,
    ...(honesty.length ? { honesty } : {}),
    lease: context.lease,
  });
  if (!closed.finished) return null; // another attempt closed it first: it has told the user
  emit({ type: 'done', turnId, text, finishReason, usage, provider });
  return closed.pending;
}

/** Results for the calls a parked turn waited on: run what was approved (once), refuse the rest. */
async function decidedResults(deps: TurnDeps, tools: TurnTools, pending: ParkedCall[], turnId: string, emit: (e: TurnEvent) => void): Promise<ToolResultMessage[]> {
  const out: ToolResultMessage[] = [];
  for (const p of pending) {
    const a = await deps.approvalStore.get(p.approvalId);
    let result: AgentToolResult<unknown>;
    let isError = true;
    if (a?.status === 'approved' && (await deps.approvalStore.markExecuted(a.id))) {
      const tool = tools.tool(p.tool);
      try {
        if (!tool) throw new Error(`the tool ${p.tool} is no longer available`);
        emit({ type: 'tool_start', turnId, toolCallId: p.toolCallId, name: p.tool, args: a.args });
        // Exactly the approved arguments, whatever the model said since.
        result = await tools.present(p.tool, a.args, await tools.execute(tool, a.args), false);
        isError = false;
      } catch (err) {
        result = await tools.present(p.tool, a.args, { content: [{ type: 'text', text: (err as Error).message }], details: null }, true);
      }
      emit({ type: 'tool_end', turnId, toolCallId: p.toolCallId, name: p.tool, isError });
    } else {
      const why =
        a?.status === 'denied' ? `Not approved: ${a.decided_by ?? 'an operator'} said no. It was not run.`
        : a?.status === 'expired' ? 'Not approved: nobody answered before the deadline (expired). It was not run.'
        : a?.status === 'executed' || a?.status === 'approved' ? 'This approved call was already run once (before a restart); it is not run again. Its result is unknown.'
        : 'Not approved. It was not run.';
      if (a?.status === 'expired') emit({ type: 'notice', turnId, text: `Approval ${a.code} expired: ${p.tool} was not run.` });
      tools.trace.push({ tool: p.tool, args: a?.args, ok: false, output: why });
      result = { content: [{ type: 'text', text: why }], details: null };
    }
    out.push({ role: 'toolResult', toolCallId: p.toolCallId, toolName: p.tool, content: result.content as ToolResultMessage['content'], isError, timestamp: Date.now() });
  }
  return out;
}

function messageText(m: Message): string {
  if (typeof m.content === 'string') return m.content;
  return m.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

function isParkedState(s: unknown): s is ParkedState {
  return !!s && typeof s === 'object' && Array.isArray((s as ParkedState).pending) && (s as ParkedState).pending.length > 0;
}

function addUsage(a: TurnUsage | undefined, b: TurnUsage): TurnUsage {
  if (!a) return b;
  return { input: a.input + b.input, output: a.output + b.output, totalTokens: a.totalTokens + b.totalTokens, cost: a.cost + b.cost };
}


/** Adds text to the last assistant message (the honesty corrections are part of the answer). */
function appendText(messages: Message[], text: string): void {
  const last = [...messages].reverse().find((m): m is AssistantMessage => m.role === 'assistant');
  if (last) last.content = [...last.content, { type: 'text', text }];
}

function toUserMessage(row: InboxRow): UserMessage {
  let text = row.text;
  const atts = row.attachments as Array<{ name?: string; contentType?: string }>;
  if (atts.length) text += `\n\n[attachments: ${atts.map((a) => `${a.name ?? 'file'}${a.contentType ? ` (${a.contentType})` : ''}`).join(', ')}]`;
  return { role: 'user', content: text, timestamp: new Date(row.received_at).getTime() };
}

/** A one-off HTTP request's own context: system messages go to the system prompt, the rest become history. */
function contextToMessages(ctx: NonNullable<InboxRow['context']>, chain: ProviderChain): { messages: Message[]; system: string[] } {
  const messages: Message[] = [];
  const system: string[] = [];
  const now = Date.now();
  for (const m of ctx) {
    if (m.role === 'system') system.push(m.text);
    else if (m.role === 'user') messages.push({ role: 'user', content: m.text, timestamp: now });
    else
      // The request's own assistant messages are the client's words: policy block refuses their secrets too.
      messages.push(markAuthor({
        role: 'assistant',
        content: [{ type: 'text', text: m.text }],
        api: chain.primary.api,
        provider: chain.primary.provider,
        model: chain.primary.id,
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
        stopReason: 'stop',
        timestamp: now,
      } satisfies AssistantMessage, 'user'));
  }
  return { messages, system };
}

/** A history window must not start with tool results whose call was cut off. */
function sanitizeHistory(msgs: Message[]): Message[] {
  let i = 0;
  while (i < msgs.length && msgs[i]!.role === 'toolResult') i++;
  return i ? msgs.slice(i) : msgs;
}
