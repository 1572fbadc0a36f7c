import type { Message, UserMessage } from '@mariozechner/pi-ai';
import { senderIdentity } from '../../adapters/store/ports/index.js';
import type { FinishReason } from '../../kernel/turn-events.js';
import { planTools } from '../../moat/planner.js';
import { Redactor } from '../../moat/secrets.js';
import type { ProviderChain } from '../../providers/chain.js';
import { type AnyTool, schemaCharsOf } from '../../tools/contract.js';
import { capSummary, estimateTokens, InTurnCompactor, safeCut, summarize, summaryCap } from '../compaction.js';
import type { Config } from '../config.js';
import { inputBudget } from '../context-fit.js';
import { findSecrets, refusalText, type SecretsPolicy, type SystemPart, userRefusal } from '../provider-request.js';
import { contextToMessages, messageText, storedPrompts, toUserMessage } from './messages.js';
import type { ParkedState } from './park.js';
import type { TurnDeps, TurnJob } from './ports.js';

export const NO_PROVIDER_REPLY =
  'No model provider is configured on this gateway, so I cannot answer yet. ' +
  'An operator needs to set ANTHROPIC_API_KEY, OPENAI_API_KEY, or OPENAI_BASE_URL with SWITCHBOARD_MODEL.';

/** A turn that ends before any model call: what it says, why, and what it stores. */
export interface EarlyClose {
  kind: 'close';
  text: string;
  finishReason: FinishReason;
  messages: Message[];
}

/** Everything the loop starts from. */
export interface Prepared {
  kind: 'run';
  chain: ProviderChain;
  agent: Config['agents'][string];
  prompts: UserMessage[];
  /** The canonical identity the turn answers (kernel/identity.ts): for memory, rules and approvals. */
  sender: string;
  /** A one-off request's own context: its messages (history) and system parts. */
  contextMessages: { messages: Message[]; system: string[] };
  /** The history after compaction. */
  history: Message[];
  /** The system prompt in parts (each redacted on its way out), the summary last. */
  system: SystemPart[];
  /** The same system prompt as one text, for the compactor's token estimate. */
  systemPrompt: string;
  secrets: { redactor: Redactor; policy: SecretsPolicy };
  compactor: InTurnCompactor;
  /** The tools offered to the model (the planner's choice). */
  offered: AnyTool[];
}

/**
 * The first phase: the prompt, a one-off request's context, the secret policy
 * "block", compaction at the start of the turn, the tool planner, and the turn's
 * Redactor. Ends the turn early when there is no provider or a secret is refused.
 */
export async function prepare(job: TurnJob, deps: TurnDeps, parked: ParkedState | null, signal?: AbortSignal): Promise<Prepared | EarlyClose> {
  const { conversation: conv, turn, batch, context } = job;
  const agent = (Object.hasOwn(deps.config.agents, conv.agent) ? deps.config.agents[conv.agent] : undefined) ?? deps.config.agents.default!;
  const prompts = batch.map(toUserMessage);
  const oneOff = batch[0]?.context ?? null;
  const sender = senderIdentity(batch[0]!);

  // A parked turn resumed after an operator took its conversation over: the takeover withdraws only
  // approvals still pending, so one answered before it (or while no worker ran) unparked this turn.
  // Nothing of the agent's runs any more, the approved call included; the user's words stay in the
  // transcript, as a withdrawn turn's do. A store that cannot say fails the attempt (it is retried).
  if (parked && (await deps.store.waitingCount(conv.key)).handoff?.state === 'taken')
    return { kind: 'close', text: '', finishReason: 'aborted', messages: storedPrompts(prompts) };
  if (!deps.chain) return { kind: 'close', text: NO_PROVIDER_REPLY, finishReason: 'no_provider', messages: storedPrompts(prompts) };
  const chain = deps.chain;

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
        : refusalText({
            kinds: [...new Set([...(parts?.kinds ?? []), ...(earlier?.kinds ?? [])])],
            where: [...(parts?.where ?? []), ...(earlier ? ['earlier messages of this conversation'] : [])],
            fromUser: false,
          });
      return { kind: 'close', text: refusal, finishReason: 'blocked_secret', messages: [] };
    }
  }
  const compaction = deps.config.compaction;
  const all = deps.tools();
  // What compaction works against: the primary's window less the answer's room, the estimate's margin and
  // every tool definition (src/context-fit.ts fits each request to its slot again, dropping the oldest messages).
  const window = Math.max(0, inputBudget(chain.primary, agent.maxTokens) - toolDefinitionTokens(all));
  const summaryTokens = summaryCap(window, compaction);
  // A summary stored before summaries were capped is cut like a new one.
  if (summary) summary = capSummary(summary, summaryTokens);

  // Compaction at the start of the turn: the oldest part of the history becomes the running summary.
  const baseSystem = systemParts.map((p) => p.text).join('\n\n');
  if (!parked && estimateTokens([...history, ...contextMessages.messages, ...prompts], `${baseSystem}${summary ?? ''}`) > compaction.threshold * window) {
    const n = safeCut(history, Math.floor(compaction.keepRecent * window));
    const upto = context.historyIds?.[n - 1];
    if (n > 0 && upto !== undefined) {
      const s = await summarize(deps.summarizer ?? chain, history.slice(0, n), summary, signal, secrets, summaryTokens);
      if (s) {
        await deps.store.saveSummary(conv.id, upto, s);
        summary = s;
        history = history.slice(n);
        deps.log.info({ conversation: conv.id, summarized: n }, 'compacted the conversation');
      } else deps.log.warn({ conversation: conv.id }, 'the summarizer failed; the transcript is kept and compaction retried later');
    }
  }
  const summaryPart: SystemPart[] = summary
    ? [{ text: `Summary of the earlier conversation (older messages are not shown):\n${summary}`, label: 'conversation summary', from: 'model' }]
    : [];
  const systemPrompt = summary ? `${baseSystem}\n\n${summaryPart[0]!.text}` : baseSystem;
  // ...and between model calls inside the turn (long tool loops), or when a provider says the context overflowed.
  const compactor = new InTurnCompactor(
    deps.summarizer ?? chain,
    window,
    compaction,
    null,
    (info) => deps.log.info({ turn: turn.id, ...info }, 'compacted inside the turn'),
    secrets,
  );

  // Tools: the planner offers only those the request needs (the full set when unsure).
  let offered = all;
  if (deps.config.tools.planner && all.length) {
    const plan = planTools(
      prompts.map(messageText).join('\n'),
      all.map((t) => ({ name: t.name, description: t.description, ...(t.toolset ? { toolset: t.toolset } : {}), schemaChars: schemaCharsOf(t) })),
      // Nothing said before (no history, no channel context, no summary, nothing parked): an opening message.
      { opening: history.length === 0 && contextMessages.messages.length === 0 && !summary && !parked },
    );
    // A resumed turn keeps every tool its parked calls may need.
    const keep = new Set([...plan.tools, ...(parked?.pending.map((p) => p.tool) ?? [])]);
    offered = all.filter((t) => keep.has(t.name));
    deps.log.debug({ turn: turn.id, tools: plan.tools, fellBack: plan.fellBack, promptCharsSaved: plan.promptCharsSaved }, 'planner guard');
  }
  return {
    kind: 'run',
    chain,
    agent,
    prompts,
    sender,
    contextMessages,
    history,
    system: [...systemParts, ...summaryPart],
    systemPrompt,
    secrets,
    compactor,
    offered,
  };
}

/** The tool definitions' share of a request, estimated as src/token-estimate.ts does (name, description, schema). */
function toolDefinitionTokens(tools: readonly AnyTool[]): number {
  let chars = 0;
  for (const t of tools) chars += t.name.length + t.description.length + schemaCharsOf(t) + 32;
  return Math.ceil(chars / 4);
}
