import type { Message } from '@mariozechner/pi-ai';
import type { TurnEventSink, TurnProvider, TurnUsage } from '../../kernel/turn-events.js';
import type { ClaimFinding } from '../../moat/honesty.js';
import type { AgentRunResult } from '../agent-loop.js';
import { checkTurnClaims } from '../honesty-judge.js';
import { refusalText } from '../provider-request.js';
import type { TurnTools } from '../turn-tools.js';
import type { StepJournal } from './journal.js';
import { appendText, noUsage, storedPrompts } from './messages.js';
import type { StoredMessage, TurnDeps, TurnJob, TurnOutcome } from './ports.js';
import type { EarlyClose, Prepared } from './prepare.js';

/** Closing a turn that takes longer than this (the honesty judge, a failing channel) journals its final answer first. */
export const KEEP_FINAL_AFTER_MS = 1_000;

/** What a chat user is told when every provider failed: no upstream error text. */
export const PROVIDER_FAILED_TEXT = 'Sorry, I could not get an answer from the model provider right now. Please try again in a moment.';

/** A turn that ends before any model call (no provider, a refused secret): say why, close it. */
export async function closeEarly(job: TurnJob, deps: Pick<TurnDeps, 'store'>, sink: TurnEventSink, c: EarlyClose): Promise<TurnOutcome> {
  const turnId = job.turn.id;
  if (c.text) sink.push({ type: 'text_delta', turnId, delta: c.text });
  await sink.flush?.();
  const usage = noUsage();
  const closed = await deps.store.finishTurn({
    turnId,
    status: 'done',
    messages: c.messages as StoredMessage[],
    finishReason: c.finishReason,
    usage: usage as unknown as Record<string, unknown>,
    lease: job.context.lease,
  });
  if (closed.finished) sink.push({ type: 'done', turnId, text: c.text, finishReason: c.finishReason, usage });
  return closed.finished ? closed.pending : null;
}

export interface SettleInput {
  prepared: Prepared;
  result: AgentRunResult;
  tools: TurnTools;
  /** The messages of the turn after its prompts: a resumed turn's earlier ones, then this run's kept ones. */
  resumed: Message[];
  kept: Message[];
  /** The reply so far (a resumed turn's earlier text included). */
  text: string;
  usage: TurnUsage;
  provider: TurnProvider;
  /** The attempt's step journal: the final answer is kept in it when closing takes long. */
  journal?: StepJournal;
}

/** The conversation is held by an operator now (its stop came from a takeover). A store that cannot say: not taken over. */
async function takenOver(job: TurnJob, deps: TurnDeps): Promise<boolean> {
  try {
    return (await deps.store.waitingCount(job.conversation.key)).handoff?.state === 'taken';
  } catch {
    // Unreadable now: the turn closes as any stopped turn does ("(Stopped.)").
    return false;
  }
}

/**
 * The settle phase: the notes that end the reply (provider error, budget, stop,
 * a refused secret, the turn cap), the honesty check, the fallback notice, and
 * the one statement that stores the transcript and closes the turn.
 */
export async function settle(job: TurnJob, deps: TurnDeps, sink: TurnEventSink, s: SettleInput, signal?: AbortSignal): Promise<TurnOutcome> {
  const turnId = job.turn.id;
  const { result, kept } = s;
  const limits = deps.config.limits;
  let text = s.text;
  const say = (note: string) => {
    text += note;
    sink.push({ type: 'text_delta', turnId, delta: note });
  };
  const finishReason = result.finishReason;
  // Resume, not rerun, also while the turn closes: past a moment the final answer is journaled.
  const keeping = s.journal?.keepFinalAfter(KEEP_FINAL_AFTER_MS);
  let honesty: ClaimFinding[] = [];
  if (finishReason === 'error') {
    // Withdraw any partial answer and say plainly that it failed. The upstream's own words (which may
    // name hosts, accounts or quotas) go to the log and the turn row, never to the people chatting;
    // the HTTP API answers a 5xx with the slot errors from the done event's attempts.
    if (result.text) sink.push({ type: 'reset', turnId, reason: 'provider error' });
    deps.log.warn(
      { turn: turnId, conversation: job.conversation.id, error: result.error, attempts: s.provider.attempts },
      'the turn failed on every model provider',
    );
    text = PROVIDER_FAILED_TEXT;
    sink.push({ type: 'text_delta', turnId, delta: text });
  } else {
    if (finishReason === 'budget')
      say(
        `\n\n(Stopped: this turn reached its budget${limits.turnTokens ? ` of ${limits.turnTokens} tokens` : ''}${limits.turnCostUsd ? ` or $${limits.turnCostUsd}` : ''}.)`,
      );
    if (finishReason === 'aborted') {
      // Stopped because an operator took the conversation over (HandoffService.take publishes the
      // stop): nothing more of the agent's goes out. The text not yet shown is withdrawn (a channel
      // that posts once, at the end, posts nothing; a streamed message is emptied as after a
      // provider error); the transcript keeps what was said, the operator answers from here.
      if (await takenOver(job, deps)) {
        if (text) sink.push({ type: 'reset', turnId, reason: 'taken over by an operator' });
        text = '';
      } else say('\n\n(Stopped.)');
    }
    // A later model call of the turn was refused (policy block): say why, as a refused message is told.
    if (finishReason === 'blocked_secret' && result.blocked) say((text ? '\n\n' : '') + refusalText(result.blocked));
    if (finishReason === 'turn_cap') say(`\n\n(Stopped after ${s.prepared.agent.maxIterations} model calls in one turn.)`);
    // The honesty check: claims of action must match this turn's tool trace.
    const check = await checkTurnClaims(deps, result.text, s.tools.trace, s.prepared.secrets.redactor, signal);
    honesty = check.findings;
    if (honesty.length) {
      const corrections = '\n\n' + honesty.map((f) => `[Correction: ${f.correction ?? f.reason}]`).join('\n');
      say(corrections);
      appendText(kept, corrections);
    }
  }
  const { provider } = s;
  if (provider.fallbackActivated && deps.config.fallback.notice)
    sink.push({ type: 'notice', turnId, text: `(answered by the fallback model ${provider.slot})` });

  const stored = [...s.prepared.contextMessages.messages, ...storedPrompts(s.prepared.prompts), ...s.resumed, ...kept] as StoredMessage[];
  await sink.flush?.();
  await keeping?.done();
  const closed = await deps.store.finishTurn({
    turnId,
    status: finishReason === 'error' ? 'failed' : 'done',
    messages: stored,
    finishReason,
    ...(result.error ? { error: result.error } : {}),
    usage: s.usage as unknown as Record<string, unknown>,
    provider: provider as unknown as Record<string, unknown>,
    ...(honesty.length ? { honesty } : {}),
    lease: job.context.lease,
  });
  if (!closed.finished) return null; // another attempt closed it first: it has told the user
  sink.push({ type: 'done', turnId, text, finishReason, usage: s.usage, provider });
  return closed.pending;
}
