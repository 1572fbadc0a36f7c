import type { AgentToolResult } from '@mariozechner/pi-agent-core';
import type { ToolResultMessage } from '@mariozechner/pi-ai';
import type { TurnEventSink } from '../../kernel/turn-events.js';
import type { TraceEntry } from '../../moat/honesty.js';
import type { TurnTrace } from '../telemetry/genai.js';
import type { ParkedCall, TurnTools } from '../turn-tools.js';
import { journaledResult, type StepJournal } from './journal.js';
import type { ApprovalRecord, TurnDeps } from './ports.js';
import { faultPoint } from './test-fault.js';

/**
 * Resuming a parked turn: results for the calls it waited on. What was approved
 * runs once, exactly the approved arguments: markExecuted claims it, then the
 * journal marks it started, it runs, and the journal keeps its result. A retried
 * attempt goes by what is known: a result journaled is reused; a call claimed but
 * never started runs now; one started but not finished runs again only if the tool
 * is idempotent, else the model is told it may or may not have completed. The rest is refused.
 */
export async function decidedResults(
  deps: Pick<TurnDeps, 'approvalStore'>,
  tools: TurnTools,
  pending: ParkedCall[],
  turnId: string,
  sink: TurnEventSink,
  journal: StepJournal,
  trace?: TurnTrace,
): Promise<ToolResultMessage[]> {
  const out: ToolResultMessage[] = [];
  for (const p of pending) {
    const a = await deps.approvalStore.get(p.approvalId);
    // Its wait was recorded where it was decided (src/approvals/service.ts); the resumed turn links the turn that parked.
    if (a) trace?.resumedFrom(a);
    const step = journal.step(p.toolCallId);
    const tool = tools.tool(p.tool);
    let result: AgentToolResult<unknown>;
    let isError = true;
    const claimedNow = a?.status === 'approved' && (await deps.approvalStore.markExecuted(a.id));
    if (claimedNow) faultPoint('approval-claimed');
    const claimed = claimedNow || a?.status === 'executed';
    if (claimed && step?.status === 'finished' && step.result) {
      // Ran and journaled by an earlier attempt: the same result again.
      tools.trace.push(step.result.trace as TraceEntry);
      result = journaledResult(step.result);
      isError = step.result.isError;
    } else if (claimed && a && (!step || tool?.idempotent)) {
      // Claimed now, or claimed by an attempt that died before the call started (or an idempotent one began it).
      ({ result, isError } = await runApproved(tools, journal, p, a, turnId, sink, trace));
    } else if (claimed && a) {
      const r = await journal.uncertain(p.toolCallId, p.tool, a.args);
      tools.trace.push(r.trace as TraceEntry);
      result = journaledResult(r);
    } else {
      const why =
        a?.status === 'denied'
          ? `Not approved: ${a.decidedBy ?? 'an operator'} said no. It was not run.`
          : a?.status === 'expired'
            ? 'Not approved: nobody answered before the deadline (expired). It was not run.'
            : 'Not approved. It was not run.';
      if (a?.status === 'expired') sink.push({ type: 'notice', turnId, text: `Approval ${a.code} expired: ${p.tool} was not run.` });
      tools.trace.push({ tool: p.tool, args: a?.args, ok: false, output: why });
      result = { content: [{ type: 'text', text: why }], details: null };
    }
    out.push({
      role: 'toolResult',
      toolCallId: p.toolCallId,
      toolName: p.tool,
      content: result.content as ToolResultMessage['content'],
      isError,
      timestamp: Date.now(),
    });
  }
  return out;
}

/** Runs an approved call with exactly the approved arguments, whatever the model said since; journaled started, then finished. */
async function runApproved(
  tools: TurnTools,
  journal: StepJournal,
  p: ParkedCall,
  a: ApprovalRecord,
  turnId: string,
  sink: TurnEventSink,
  trace?: TurnTrace,
): Promise<{ result: AgentToolResult<unknown>; isError: boolean }> {
  const tool = tools.tool(p.tool);
  let result: AgentToolResult<unknown>;
  let isError = true;
  // A failed journal write throws: the turn stops here, before the call runs or its result is used.
  await journal.started(p.toolCallId, p.tool);
  trace?.toolStart(p.toolCallId, p.tool);
  try {
    if (!tool) throw new Error(`the tool ${p.tool} is no longer available`);
    sink.push({ type: 'tool_start', turnId, toolCallId: p.toolCallId, name: p.tool, args: a.args });
    faultPoint('tool-started');
    result = await tools.present(p.tool, a.args, await tools.execute(tool, a.args), false);
    isError = false;
  } catch (err) {
    result = await tools.present(p.tool, a.args, { content: [{ type: 'text', text: (err as Error).message }], details: null }, true);
  }
  // The moat asked, an operator approved: the call ran now, on resume.
  trace?.toolEnd(p.toolCallId, { isError, decision: { decision: 'approved', approvalId: a.id } });
  faultPoint('tool-ran');
  // present() traced the call last.
  await journal.finished(p.toolCallId, p.tool, { content: result.content, isError, trace: tools.trace[tools.trace.length - 1] });
  faultPoint('tool-finished');
  sink.push({ type: 'tool_end', turnId, toolCallId: p.toolCallId, name: p.tool, isError });
  return { result, isError };
}
