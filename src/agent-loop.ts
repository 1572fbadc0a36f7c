import {
  type AfterToolCallContext,
  type AfterToolCallResult,
  type AgentEvent,
  type AgentMessage,
  type AgentTool,
  type BeforeToolCallContext,
  type BeforeToolCallResult,
  runAgentLoop,
  runAgentLoopContinue,
} from '@mariozechner/pi-agent-core';
import { type AssistantMessage, type Context, createAssistantMessageEventStream, type Message } from '@mariozechner/pi-ai';
import type { ResponseFormat } from '../kernel/envelope.js';
import type { FinishReason, TurnEvent, TurnEventSink, TurnUsage } from '../kernel/turn-events.js';
import { Redactor } from '../moat/secrets.js';
import type { Attempt, ChainHooks, ProviderChain } from '../providers/chain.js';
import { responseFormatPayload } from '../providers/response-format.js';
import { type SecretsFound, type SecretsPolicy, type SystemPart, sendToProvider } from './provider-request.js';
import { keptBeforeDone, replayStream } from './replay-stream.js';
import type { ToolDecision, TurnTrace } from './telemetry/genai.js';

/**
 * One turn of the single-loop agent, on pi-agent-core's low-level agentLoop:
 * the provider chain plugs in as streamFn, the turn cap as shouldStopAfterTurn.
 * What the user sees (text, tool calls, resets, notices) is written straight
 * into the turn's TurnEventSink; only what is not an event (provider attempts,
 * the context-overflow question) stays a hook.
 */
export interface AgentRunInput {
  /** The system prompt, whole or in parts (each part is redacted on its way out). */
  systemPrompt: string | ReadonlyArray<SystemPart | string>;
  /** Transcript before this turn. */
  history: Message[];
  /** This turn's new user messages. */
  prompts: Message[];
  tools: AgentTool[];
  chain: ProviderChain;
  maxIterations: number;
  maxTokens?: number;
  temperature?: number;
  /** JSON mode / a JSON schema for the agent's model calls (the HTTP API checked that every slot takes it). */
  responseFormat?: ResponseFormat;
  signal?: AbortSignal;
  sessionId?: string;
  /** Continue a parked turn: these messages (ending with tool results) follow the prompts. */
  resumed?: Message[];
  beforeToolCall?: (c: BeforeToolCallContext, signal?: AbortSignal) => Promise<BeforeToolCallResult | undefined>;
  afterToolCall?: (c: AfterToolCallContext, signal?: AbortSignal) => Promise<AfterToolCallResult | undefined>;
  /** Checked after each model turn: true ends the loop (a call is waiting for approval). */
  stopWhen?: () => boolean;
  /** How every model call is guarded (src/provider-request.ts); default: a fresh Redactor, policy 'redact'. */
  secrets?: { redactor: Redactor; policy: SecretsPolicy };
  /** steer mode: messages that arrived meanwhile, injected before the next model call. */
  getSteeringMessages?: () => Promise<Message[]>;
  /** Per-turn budget, checked before each model call (0: none). */
  budget?: { tokens: number; costUsd: number; spent?: TurnUsage };
  /** Before each model call: what the model sees of the messages (compaction). */
  transformContext?: (messages: Message[], signal?: AbortSignal) => Promise<Message[]>;
  /** A call that parked for an operator's approval: its code (its tool_end is `pending`, not a failure). */
  parkedCall?: (toolCallId: string) => { code: string } | undefined;
  /** A call of an attempt that is being abandoned (retried): it neither ran nor failed, so no tool_end is said. */
  abandonedCall?: (toolCallId: string) => boolean;
  /** Resume, not rerun (src/turn/journal.ts): journaled responses are played back, new ones that ask for tools are kept. */
  journal?: ModelJournal;
  /** The turn's model-call and tool-call spans (src/telemetry/genai.ts); no-ops when tracing is off. */
  trace?: TurnTrace;
  /** What the moat decided for a call (its span carries it). */
  toolDecision?: (toolCallId: string) => ToolDecision | undefined;
}

/** The model side of a turn's step journal, by the index of each model call in the turn. */
export interface ModelJournal {
  /** The index of this run's first model call (a parked turn's calls continue its numbering). */
  firstCall: number;
  /** The journaled response of model call #index, if an earlier attempt got one. */
  replayModel(index: number): { message: AssistantMessage; attempts: Attempt[] } | undefined;
  /** Keeps a response that asks for tools, before any of them runs; rejects when it could not. */
  recordModel(index: number, message: AssistantMessage, attempts: Attempt[]): Promise<void>;
  /** A final text-only response: remembered, not written (settle keeps it only when closing the turn takes long). */
  finalModel?(index: number, message: AssistantMessage, attempts: Attempt[]): void;
  /** Set once a journal write failed: the loop stops at its next event. */
  failed(): Error | undefined;
}

/** Where one run's events go, and the two hooks that are not events. */
export interface AgentRunOutput {
  sink: TurnEventSink;
  turnId: string;
  /** Every model call attempt, for the turn's ledger and the metrics. */
  onAttempt?(a: Attempt): void;
  /** A journaled response was played back: the attempts it took then (for the ledger; they are not new). */
  onReplay?(attempts: Attempt[]): void;
  /** The context is too large for the slot: return a smaller one (compaction) to retry with, or null. */
  onContextOverflow?: ChainHooks['onContextOverflow'];
}

/** The callback form, for callers outside a turn (the chain's own tests): the same events as calls. */
export interface AgentRunCallbacks extends ChainHooks {
  onText(delta: string): void;
  onToolStart?(e: { toolCallId: string; name: string; args: unknown }): void;
  onToolEnd?(e: { toolCallId: string; name: string; isError: boolean }): void;
}

export interface AgentRunResult {
  /** Messages this turn added after the prompts: assistant messages and tool results. */
  newMessages: Message[];
  finishReason: FinishReason;
  /** The reply as shown: all assistant text of the turn, iterations separated by a blank line. */
  text: string;
  usage: TurnUsage;
  /** The provider's error, when finishReason is 'error'. */
  error?: string;
  /** finishReason 'blocked_secret': the request policy 'block' refused, and why. */
  blocked?: SecretsFound;
  /** The index the turn's next model call would have (journal.firstCall + the calls of this run). */
  modelCalls: number;
}

export function runAgent(input: AgentRunInput, cb: AgentRunCallbacks): Promise<AgentRunResult> {
  const sink: TurnEventSink = {
    push: (e: TurnEvent) => {
      if (e.type === 'text_delta') cb.onText(e.delta);
      else if (e.type === 'tool_start') cb.onToolStart?.({ toolCallId: e.toolCallId, name: e.name, args: e.args });
      else if (e.type === 'tool_end') cb.onToolEnd?.({ toolCallId: e.toolCallId, name: e.name, isError: e.isError });
      else if (e.type === 'reset') cb.onReset?.(e.reason);
      else if (e.type === 'notice') cb.onNotice?.(e.text);
    },
  };
  return runAgentTurn(input, {
    sink,
    turnId: '',
    ...(cb.onAttempt ? { onAttempt: cb.onAttempt } : {}),
    ...(cb.onContextOverflow ? { onContextOverflow: cb.onContextOverflow } : {}),
  });
}

export async function runAgentTurn(input: AgentRunInput, out: AgentRunOutput): Promise<AgentRunResult> {
  const { sink, turnId } = out;
  let iterations = 0;
  let text = '';
  /** Length of `text` when the current assistant message began: a reset cuts back to it. */
  let textAtMessageStart = 0;
  let textInMessage = false;
  let capped = false;
  const usage: TurnUsage = { input: 0, output: 0, totalTokens: 0, cost: 0 };

  // A journal write that failed (the lease is lost) stops the loop at its next event.
  const emit = (e: AgentEvent): void => {
    const failed = input.journal?.failed();
    if (failed) throw failed;
    switch (e.type) {
      case 'message_start':
        if (e.message.role === 'assistant') {
          textInMessage = false;
          textAtMessageStart = text.length;
        }
        break;
      case 'message_update': {
        const ev = e.assistantMessageEvent;
        if (ev.type === 'text_delta' && ev.delta) {
          // A new assistant message after earlier text starts a new paragraph.
          const delta = !textInMessage && text ? `\n\n${ev.delta}` : ev.delta;
          textInMessage = true;
          text += delta;
          sink.push({ type: 'text_delta', turnId, delta });
        }
        break;
      }
      case 'message_end':
        if (e.message.role === 'assistant') {
          input.trace?.chatEnd(e.message as AssistantMessage);
          const u = (e.message as AssistantMessage).usage;
          if (u) {
            usage.input += u.input;
            usage.output += u.output;
            usage.totalTokens += u.totalTokens;
            usage.cost += u.cost?.total ?? 0;
          }
        }
        break;
      case 'tool_execution_start':
        input.trace?.toolStart(e.toolCallId, e.toolName);
        sink.push({ type: 'tool_start', turnId, toolCallId: e.toolCallId, name: e.toolName, args: e.args });
        break;
      case 'tool_execution_end': {
        // A call that parked did not run and did not fail: it waits for its approval code.
        const pending = input.parkedCall?.(e.toolCallId);
        const decision = input.toolDecision?.(e.toolCallId);
        input.trace?.toolEnd(e.toolCallId, { isError: e.isError, pending: !!pending, ...(decision ? { decision } : {}) });
        if (input.abandonedCall?.(e.toolCallId)) break;
        sink.push({
          type: 'tool_end',
          turnId,
          toolCallId: e.toolCallId,
          name: e.toolName,
          isError: pending ? false : e.isError,
          ...(pending ? { pending } : {}),
        });
        break;
      }
    }
  };

  const config = {
    model: input.chain.primary,
    convertToLlm: (msgs: AgentMessage[]) => msgs.filter(isLlmMessage),
    shouldStopAfterTurn: () => {
      iterations++;
      if (input.stopWhen?.()) return true;
      if (iterations >= input.maxIterations) {
        capped = true;
        return true;
      }
      return false;
    },
    toolExecution: 'sequential' as const,
    ...(input.beforeToolCall ? { beforeToolCall: input.beforeToolCall } : {}),
    ...(input.afterToolCall ? { afterToolCall: input.afterToolCall } : {}),
    ...(input.maxTokens ? { maxTokens: input.maxTokens } : {}),
    ...(input.temperature !== undefined ? { temperature: input.temperature } : {}),
    ...(input.sessionId ? { sessionId: input.sessionId } : {}),
    ...(input.getSteeringMessages ? { getSteeringMessages: input.getSteeringMessages } : {}),
    ...(input.transformContext
      ? { transformContext: async (msgs: AgentMessage[], signal?: AbortSignal) => input.transformContext!(msgs.filter(isLlmMessage), signal) }
      : {}),
  };
  let budgetHit = false;
  let blocked: SecretsFound | undefined;
  const system = typeof input.systemPrompt === 'string' ? [input.systemPrompt] : input.systemPrompt;
  const secrets = input.secrets ?? { redactor: new Redactor(), policy: 'redact' as const };
  let nextCall = input.journal?.firstCall ?? 0;
  const streamFn = (_model: unknown, context: Context, options?: Parameters<ProviderChain['stream']>[1]) => {
    const index = nextCall++;
    // Resume, not rerun: an earlier attempt's response to this call is played back, no provider asked.
    const replayed = input.journal?.replayModel(index);
    const callSettings = {
      ...(input.maxTokens ? { maxTokens: input.maxTokens } : {}),
      ...(input.temperature !== undefined ? { temperature: input.temperature } : {}),
    };
    if (replayed) {
      input.trace?.chatStart(input.chain.primary, { ...callSettings, replayed: true });
      out.onReplay?.(replayed.attempts);
      return replayStream(replayed.message);
    }
    // The budget is checked before each model call: a call that would start past it is not made.
    const b = input.budget;
    const spentTokens = usage.totalTokens + (b?.spent?.totalTokens ?? 0);
    const spentCost = usage.cost + (b?.spent?.cost ?? 0);
    if (b && ((b.tokens && spentTokens >= b.tokens) || (b.costUsd && spentCost >= b.costUsd))) {
      budgetHit = true;
      const out = createAssistantMessageEventStream();
      const model = input.chain.primary;
      out.push({
        type: 'error',
        reason: 'aborted',
        error: {
          role: 'assistant',
          content: [],
          api: model.api,
          provider: model.provider,
          model: model.id,
          usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
          stopReason: 'aborted',
          errorMessage: 'turn budget reached',
          timestamp: Date.now(),
        },
      });
      return out;
    }
    const callAttempts: Attempt[] = [];
    input.trace?.chatStart(input.chain.primary, callSettings);
    // Every model call goes through the request builder: redacted, or refused under policy 'block'.
    const live = sendToProvider(
      input.chain,
      { system, messages: context.messages, ...(context.tools ? { tools: context.tools } : {}) },
      {
        ...secrets,
        options: input.responseFormat ? { ...options, onPayload: responseFormatPayload(input.responseFormat) } : (options ?? {}),
        hooks: {
          // The chain withdraws the partial message: forget its text too.
          onReset: (reason) => {
            text = text.slice(0, textAtMessageStart);
            textInMessage = false;
            sink.push({ type: 'reset', turnId, reason });
          },
          onNotice: (notice) => sink.push({ type: 'notice', turnId, text: notice }),
          onAttempt: (a) => {
            callAttempts.push(a);
            input.trace?.chatAttempt(a, input.chain.slots.find((s) => s.id === a.slot)?.model.baseUrl);
            out.onAttempt?.(a);
          },
          ...(out.onContextOverflow ? { onContextOverflow: out.onContextOverflow } : {}),
        },
        onBlocked: (found) => (blocked = found),
      },
    );
    const journal = input.journal;
    if (!journal) return live;
    // A response that asks for tools is journaled before any of them runs. A final text-only
    // one is not written here: the settle statement stores it (settle journals it first only
    // when closing the turn takes long: src/turn/settle.ts).
    return keptBeforeDone(live, (m) => {
      if (m.content.some((c) => c.type === 'toolCall')) return journal.recordModel(index, m, callAttempts);
      journal.finalModel?.(index, m, callAttempts);
      return undefined;
    });
  };
  const systemText = system
    .map((p) => (typeof p === 'string' ? p : p.text))
    .filter(Boolean)
    .join('\n\n');
  const context = { systemPrompt: systemText, messages: [...input.history] as AgentMessage[], tools: input.tools };
  let added: Message[];
  try {
    if (input.resumed) {
      context.messages.push(...input.prompts, ...input.resumed);
      added = ((await runAgentLoopContinue(context, config, emit, input.signal, streamFn)) as Message[]).filter(isLlmMessage);
    } else {
      // runAgentLoop returns the prompts too; the caller stores those itself.
      added = ((await runAgentLoop(input.prompts, context, config, emit, input.signal, streamFn)) as Message[])
        .slice(input.prompts.length)
        .filter(isLlmMessage);
    }
  } catch (err) {
    input.trace?.endAll(err);
    throw err;
  }
  input.trace?.endAll();
  const failed = input.journal?.failed();
  if (failed) throw failed;
  const last = [...added].reverse().find((m): m is AssistantMessage => m.role === 'assistant');
  let finishReason: FinishReason = 'stop';
  let error: string | undefined;
  if (blocked && last?.stopReason === 'error') finishReason = 'blocked_secret';
  else if (last?.stopReason === 'error') {
    finishReason = 'error';
    error = last.errorMessage ?? 'the model provider failed';
  } else if (budgetHit) finishReason = 'budget';
  else if (last?.stopReason === 'aborted') finishReason = 'aborted';
  else if (last?.stopReason === 'length') finishReason = 'length';
  else if (capped && last?.stopReason === 'toolUse') finishReason = 'turn_cap';
  return {
    newMessages: added,
    finishReason,
    text,
    usage,
    modelCalls: nextCall,
    ...(error ? { error } : {}),
    ...(finishReason === 'blocked_secret' && blocked ? { blocked } : {}),
  };
}

function isLlmMessage(m: AgentMessage): m is Message {
  const role = (m as { role?: string }).role;
  return role === 'user' || role === 'assistant' || role === 'toolResult';
}
