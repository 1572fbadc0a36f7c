import type { Message } from '@mariozechner/pi-ai';
import type { TurnProvider } from '../../kernel/turn-events.js';
import type { Attempt } from '../../providers/chain.js';
import { runAgentTurn } from '../agent-loop.js';
import { findSecrets } from '../provider-request.js';
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
 * The transcript is written once, atomically, at the end, so a turn that dies
 * midway is simply run again.
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

  const t = turnTools(job, deps, p, parked, sink, signal);
  // Resuming a parked turn: the decided calls get their results first.
  const resumed: Message[] | undefined = parked ? [...parked.messages, ...(await decidedResults(deps, t.tools, parked.pending, turnId, sink))] : undefined;

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
      stopWhen: () => t.tools.parked.length > 0,
      parkedCall: (id) => t.tools.parkedCode(id),
      secrets: p.secrets,
      // Called before each model call: a lost lease aborts the turn's signal here, so the call is not made.
      transformContext: (messages, sig) => {
        lease?.check();
        return p.compactor.transform(messages, p.systemPrompt, sig);
      },
      budget: { tokens: deps.config.limits.turnTokens, costUsd: deps.config.limits.turnCostUsd, ...(parked ? { spent: parked.usage } : {}) },
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
    },
  );
  if (lease && !lease.check()) return null; // stopped by the lost lease: neither parked nor settled here
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
    return park(deps, sink, { turnId, tools: t.tools, messages: [...(resumed ?? []), ...kept], text, usage, attempts, provider, lease: job.context.lease });
  return settle(job, deps, sink, { prepared: p, result, tools: t.tools, resumed: resumed ?? [], kept, text, usage, provider }, signal);
}
