import type { Message } from '@mariozechner/pi-ai';
import type { ApprovalInfo, TurnEventSink, TurnProvider, TurnUsage } from '../../kernel/turn-events.js';
import type { TraceEntry } from '../../moat/honesty.js';
import type { Attempt } from '../../providers/chain.js';
import { requesterMayAnswer } from '../approvals/rights.js';
import type { ParkedCall, TurnTools } from '../turn-tools.js';
import type { TurnDeps } from './ports.js';
import { faultPoint } from './test-fault.js';

/** A parked turn's loop state, kept on its row until its approvals are decided. */
export interface ParkedState {
  /** This turn's messages after its prompts so far, without the placeholders of waiting calls. */
  messages: Message[];
  pending: ParkedCall[];
  trace: TraceEntry[];
  text: string;
  usage: TurnUsage;
  attempts: Attempt[];
  /** Model calls the turn made so far: the resumed loop numbers its calls on from here (the step journal's index). */
  modelCalls?: number;
}

export function isParkedState(s: unknown): s is ParkedState {
  return !!s && typeof s === 'object' && Array.isArray((s as ParkedState).pending) && (s as ParkedState).pending.length > 0;
}

export interface ParkInput {
  turnId: string;
  tools: TurnTools;
  /** The messages of the turn so far (a resumed turn's earlier ones first). */
  messages: Message[];
  text: string;
  usage: TurnUsage;
  attempts: Attempt[];
  provider: TurnProvider;
  /** The drain's lease token: the park is fenced on it. */
  lease?: string;
  modelCalls: number;
}

/**
 * The park phase: a call waits for an operator. The request goes out as
 * approval_requested events only (each channel renders them; no request text
 * joins the reply or the transcript), the loop state is kept on the turn row,
 * and the worker is free; the decision resumes the turn. Returns nothing to drain next.
 */
export async function park(deps: Pick<TurnDeps, 'store' | 'approvals' | 'config'>, sink: TurnEventSink, p: ParkInput): Promise<null> {
  const { tools, turnId } = p;
  const waiting = new Set(tools.parked.map((c) => c.toolCallId));
  const state: ParkedState = {
    messages: p.messages.filter((m) => !(m.role === 'toolResult' && waiting.has(m.toolCallId))),
    pending: tools.parked,
    trace: tools.trace,
    text: p.text,
    usage: p.usage,
    attempts: p.attempts,
    modelCalls: p.modelCalls,
  };
  // Ask first, then park. A crash in between retries the turn, which replays the journaled
  // model response: the same tool call id asks again and gets the same approval row and code.
  const approvals: ApprovalInfo[] = tools.requested.map((a) => ({
    code: a.code,
    tool: a.tool,
    tier: a.tier,
    expiresAt: new Date(a.expiresAt).toISOString(),
    args: a.args,
    reasons: a.reasons,
    alwaysPermitted: a.rulePermitted,
    selfApprovable: requesterMayAnswer(deps.config.approvals, a.requester, a.tier),
  }));
  for (const approval of approvals) sink.push({ type: 'approval_requested', turnId, approval });
  await sink.flush?.();
  // What an earlier, failed attempt asked and this one did not: nobody waits for it.
  await deps.approvals.supersede(
    turnId,
    tools.requested.map((a) => a.id),
  );
  faultPoint('before-park');
  if (!(await deps.store.parkTurn(turnId, state, p.lease))) return null;
  await deps.approvals.resumeIfReady(turnId); // answered before we parked?
  sink.push({ type: 'done', turnId, text: p.text, finishReason: 'approval_pending', usage: p.usage, provider: p.provider, approvals });
  return null;
}
