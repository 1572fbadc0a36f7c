import type { Message } from '@mariozechner/pi-ai';
import type { TurnProvider } from '../../kernel/turn-events.js';
import type { Attempt } from '../../providers/chain.js';
import { runAgentTurn } from '../agent-loop.js';
import { findSecrets } from '../provider-request.js';
import { StepJournal } from './journal.js';
import { addUsage, sanitizeHistory } from './messages.js';
import { modelSettings } from './overrides.js';
import { isParkedState, park } from './park.js';
import type { TurnDeps, TurnJob, TurnOutcome, TurnSink } from './ports.js';
import { prepare } from './prepare.js';
import { decidedResults } from './resume.js';
import { closeEarly, settle } from './settle.js';
import { turnTools } from './tools.js';

export interface RunTurn {
  job: TurnJob;
  deps: TurnDeps;
  /** Everything the user (and the bus, metrics, webhooks) sees of the turn; flushed before it is closed or parked. */
  sink: TurnSink;
  signal?: AbortSignal;
}

/**
 * Runs one turn to its end and closes its row: prepare, tools, the agent loop,
 * then park (a call waits for an operator) or settle. Returns the conversation's
 * other waiting inbox rows (null when the turn parked, or another attempt closed it).
 * The transcript is written once, atomically, at the end; along the way the step
 * journal keeps model responses that ask for tools and tool results, so a retried
 * attempt replays them instead of asking and running again (src/turn/journal.ts).
 */
export async function runTurn({ job, deps, sink, signal }: RunTurn): Promise<TurnOutcome> {
  const { conversation: conv, turn, batch } = job;
  const turnId = turn.id;
  sink.push({ type: 'turn_start', turnId, conversationId: conv.id, inboxIds: batch.map((r) => r.id), attempt: turn.attempt });
  const parked = isParkedState(turn.state) ? turn.state : null;

  const lease = job.leaseGuard;
  const p = await prepare(job, deps, parked, signal);
  if (lease && !lease.check()) return null; // another attempt may be running: this one does nothing more
  if (p.kind === 'close') return closeEarly(job, deps, sink, p);

  // Resume, not rerun: a retried attempt finds what earlier ones did (model responses, tool results).
  const journal = await StepJournal.open(deps.store, job, sink, deps.log);
  const t = turnTools(job, deps, p, parked, sink, journal, signal);
  // Resuming a parked turn: the decided calls get their results first.
  const resumed: Message[] | undefined = parked
    ? [...parked.messages, ...(await decidedResults(deps, t.tools, parked.pending, turnId, sink, journal, job.trace))]
    : undefined;

  const attempts: Attempt[] = [...(parked?.attempts ?? [])];
  let slot: string | undefined;
  const { agent, chain } = p;
  const result = await runAgentTurn(
    {
      systemPrompt: p.system,
      history: [...sanitizeHistory(p.history), ...p.contextMessages.messages],
      prompts: p.prompts,
      tools: t.tools.agentTools(),
      chain,
      maxIterations: agent.maxIterations,
      ...modelSettings(agent, batch),
      ...(signal ? { signal } : {}),
      sessionId: conv.id,
      ...(resumed ? { resumed } : {}),
      beforeToolCall: lease
        ? async (c) => (lease.check() ? t.beforeToolCall(c) : { block: true, reason: 'Stopped: the conversation lease was lost.' })
        : t.beforeToolCall,
      afterToolCall: t.tools.afterToolCall,
      ...(t.getSteeringMessages ? { getSteeringMessages: t.getSteeringMessages } : {}),
      // A call parked, or the store failed while gating a call (the attempt is abandoned, below).
      stopWhen: () => t.tools.parked.length > 0 || !!t.tools.failure,
      parkedCall: (id) => t.tools.parkedCode(id),
      abandonedCall: (id) => t.tools.abandoned.has(id),
      secrets: p.secrets,
      // Called before each model call: a lost lease aborts the turn's signal here, so the call is not made.
      transformContext: (messages, sig) => {
        lease?.check();
        return p.compactor.transform(messages, p.systemPrompt, sig);
      },
      budget: { tokens: deps.config.limits.turnTokens, costUsd: deps.config.limits.turnCostUsd, ...(parked ? { spent: parked.usage } : {}) },
      journal: journal.forModels(parked?.modelCalls ?? 0),
      ...(job.trace ? { trace: job.trace, toolDecision: (id: string) => t.tools.decisions.get(id) } : {}),
    },
    {
      sink,
      turnId,
      onContextOverflow: async (ctx) => {
        const messages = await p.compactor.transform(ctx.messages, p.systemPrompt, signal, true);
        return messages.length < ctx.messages.length ? { ...ctx, messages } : null;
      },
      onAttempt: (a) => {
        attempts.push(a);
        sink.attempt?.(a);
        if (a.error === 'ok') slot = a.slot;
      },
      // A replayed response's attempts were counted when they happened: the ledger only.
      onReplay: (replayed) => {
        attempts.push(...replayed);
        for (const a of replayed) if (a.error === 'ok') slot = a.slot;
      },
    },
  );
  if (lease && !lease.check()) return null; // stopped by the lost lease: neither parked nor settled here
  // Retryable: the job runs the turn again (nothing of this attempt was written); the model never read the failure.
  if (t.tools.failure) throw t.tools.failure;
  const usage = addUsage(parked?.usage, result.usage);
  const text = parked?.text ? (result.text ? `${parked.text}\n\n${result.text}` : parked.text) : result.text;
  const provider: TurnProvider = { slot: slot ?? null, fallbackActivated: slot !== undefined && slot !== chain.slots[0]!.id, attempts };
  const kept = result.newMessages.filter(
    (m) =>
      !(m.role === 'assistant' && (m.stopReason === 'error' || m.stopReason === 'aborted')) &&
      // A message that joined the turn (steer) and was refused for a secret is not kept either.
      !(result.finishReason === 'blocked_secret' && m.role === 'user' && findSecrets({ messages: [m] }, p.secrets.redactor)),
  );

  if (t.tools.parked.length)
    return park(deps, sink, {
      turnId,
      tools: t.tools,
      messages: [...(resumed ?? []), ...kept],
      text,
      usage,
      attempts,
      provider,
      modelCalls: result.modelCalls,
      lease: job.context.lease,
    });
  return settle(job, deps, sink, { prepared: p, result, tools: t.tools, resumed: resumed ?? [], kept, text, usage, provider, journal }, signal);
}
