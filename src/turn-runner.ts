import type { AssistantMessage, Message, UserMessage } from '@mariozechner/pi-ai';
import type { ConversationRow, InboxRow, Store, StoredMessage, TurnRow } from '../adapters/store/store.js';
import type { ProviderChain, Attempt } from '../providers/chain.js';
import { runAgent } from './agent-loop.js';
import type { Config } from './config.js';
import type { TurnEvent, TurnProvider } from './events.js';
import type { PromptComposer } from './prompt.js';

export const NO_PROVIDER_REPLY =
  'No model provider is configured on this gateway, so I cannot answer yet. ' +
  'An operator needs to set ANTHROPIC_API_KEY, OPENAI_API_KEY, or OPENAI_BASE_URL with SWITCHBOARD_MODEL.';

export interface TurnDeps {
  store: Store;
  chain: ProviderChain | null;
  prompts: PromptComposer;
  config: Config;
}

/**
 * Runs one turn to its end and closes its row; returns the conversation's other
 * waiting inbox rows (null if another attempt had already closed the turn). Everything the user sees goes
 * out through `emit`; the transcript is written once, atomically, at the end, so
 * a turn that dies midway leaves nothing half-written and is simply run again.
 */
/** What a turn starts from: the transcript window and memory notes (loaded with the turn row). */
export interface TurnContext {
  history: StoredMessage[];
  memory: string[];
}

export async function runTurn(
  deps: TurnDeps,
  conv: ConversationRow,
  turn: TurnRow,
  batch: InboxRow[],
  context: TurnContext,
  emit: (e: TurnEvent) => void,
  signal?: AbortSignal,
): Promise<InboxRow[] | null> {
  const turnId = turn.id;
  emit({ type: 'turn_start', turnId, conversationId: conv.id, inboxIds: batch.map((r) => r.id), attempt: turn.attempt });
  const agent = deps.config.agents[conv.agent] ?? deps.config.agents.default!;
  const prompts = batch.map(toUserMessage);
  const oneOff = batch[0]?.context ?? null;

  if (!deps.chain) {
    emit({ type: 'text_delta', turnId, delta: NO_PROVIDER_REPLY });
    const usage = { input: 0, output: 0, totalTokens: 0, cost: 0 };
    const closed = await deps.store.finishTurn({ turnId, status: 'done', messages: prompts as StoredMessage[], finishReason: 'no_provider', usage });
    if (closed.finished) emit({ type: 'done', turnId, text: NO_PROVIDER_REPLY, finishReason: 'no_provider', usage });
    return closed.finished ? closed.pending : null;
  }
  const chain = deps.chain;

  const history = context.history as unknown as Message[];
  const { memory } = context;
  const contextMessages = oneOff ? contextToMessages(oneOff, chain) : { messages: [] as Message[], system: [] as string[] };
  const systemPrompt = deps.prompts.compose({ channel: conv.channel, agent, memory, extraSystem: contextMessages.system });

  const attempts: Attempt[] = [];
  let slot: string | undefined;
  const result = await runAgent(
    {
      systemPrompt,
      history: [...sanitizeHistory(history), ...contextMessages.messages],
      prompts,
      tools: [],
      chain,
      maxIterations: agent.maxIterations,
      ...(agent.maxTokens ? { maxTokens: agent.maxTokens } : {}),
      ...(agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
      ...(signal ? { signal } : {}),
      sessionId: conv.id,
    },
    {
      onText: (delta) => emit({ type: 'text_delta', turnId, delta }),
      onToolStart: (e) => emit({ type: 'tool_start', turnId, ...e }),
      onToolEnd: (e) => emit({ type: 'tool_end', turnId, ...e }),
      onReset: (reason) => emit({ type: 'reset', turnId, reason }),
      onNotice: (text) => emit({ type: 'notice', turnId, text }),
      onAttempt: (a) => {
        attempts.push(a);
        if (a.error === 'ok') slot = a.slot;
      },
    },
  );

  let text = result.text;
  if (result.finishReason === 'error') {
    // Withdraw any partial answer and say plainly what went wrong.
    if (text) emit({ type: 'reset', turnId, reason: 'provider error' });
    text = `Sorry, I could not get an answer from the model provider. ${result.error}. Please try again.`;
    emit({ type: 'text_delta', turnId, delta: text });
  } else if (result.finishReason === 'turn_cap') {
    const note = `\n\n(Stopped after ${agent.maxIterations} model calls in one turn.)`;
    text += note;
    emit({ type: 'text_delta', turnId, delta: note });
  }

  const stored = [
    ...contextMessages.messages,
    ...prompts,
    // A failed or aborted model call is not part of the conversation the model sees next time.
    ...result.newMessages.filter((m) => !(m.role === 'assistant' && (m.stopReason === 'error' || m.stopReason === 'aborted'))),
  ] as StoredMessage[];
  const provider: TurnProvider = { slot: slot ?? null, fallbackActivated: slot !== undefined && slot !== chain.slots[0]!.id, attempts };
  if (provider.fallbackActivated && deps.config.fallback.notice) emit({ type: 'notice', turnId, text: `(answered by the fallback model ${slot})` });
  const closed = await deps.store.finishTurn({
    turnId,
    status: result.finishReason === 'error' ? 'failed' : 'done',
    messages: stored,
    finishReason: result.finishReason,
    ...(result.error ? { error: result.error } : {}),
    usage: result.usage as unknown as Record<string, unknown>,
    provider: provider as unknown as Record<string, unknown>,
  });
  if (!closed.finished) return null; // another attempt closed it first: it has told the user
  emit({ type: 'done', turnId, text, finishReason: result.finishReason, usage: result.usage, provider });
  return closed.pending;
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
      messages.push({
        role: 'assistant',
        content: [{ type: 'text', text: m.text }],
        api: chain.primary.api,
        provider: chain.primary.provider,
        model: chain.primary.id,
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
        stopReason: 'stop',
        timestamp: now,
      } satisfies AssistantMessage);
  }
  return { messages, system };
}

/** A history window must not start with tool results whose call was cut off. */
function sanitizeHistory(msgs: Message[]): Message[] {
  let i = 0;
  while (i < msgs.length && msgs[i]!.role === 'toolResult') i++;
  return i ? msgs.slice(i) : msgs;
}
