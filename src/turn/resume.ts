import type { AgentToolResult } from '@mariozechner/pi-agent-core';
import type { ToolResultMessage } from '@mariozechner/pi-ai';
import type { TurnEventSink } from '../../kernel/turn-events.js';
import type { ParkedCall, TurnTools } from '../turn-tools.js';
import type { TurnDeps } from './ports.js';

/**
 * Resuming a parked turn: results for the calls it waited on. What was approved
 * runs once (exactly the approved arguments; markExecuted claims it), the rest is refused.
 */
export async function decidedResults(
  deps: Pick<TurnDeps, 'approvalStore'>,
  tools: TurnTools,
  pending: ParkedCall[],
  turnId: string,
  sink: TurnEventSink,
): Promise<ToolResultMessage[]> {
  const out: ToolResultMessage[] = [];
  for (const p of pending) {
    const a = await deps.approvalStore.get(p.approvalId);
    let result: AgentToolResult<unknown>;
    let isError = true;
    if (a?.status === 'approved' && (await deps.approvalStore.markExecuted(a.id))) {
      const tool = tools.tool(p.tool);
      try {
        if (!tool) throw new Error(`the tool ${p.tool} is no longer available`);
        sink.push({ type: 'tool_start', turnId, toolCallId: p.toolCallId, name: p.tool, args: a.args });
        // Exactly the approved arguments, whatever the model said since.
        result = await tools.present(p.tool, a.args, await tools.execute(tool, a.args), false);
        isError = false;
      } catch (err) {
        result = await tools.present(p.tool, a.args, { content: [{ type: 'text', text: (err as Error).message }], details: null }, true);
      }
      sink.push({ type: 'tool_end', turnId, toolCallId: p.toolCallId, name: p.tool, isError });
    } else {
      const why =
        a?.status === 'denied'
          ? `Not approved: ${a.decidedBy ?? 'an operator'} said no. It was not run.`
          : a?.status === 'expired'
            ? 'Not approved: nobody answered before the deadline (expired). It was not run.'
            : a?.status === 'executed' || a?.status === 'approved'
              ? 'This approved call was already run once (before a restart); it is not run again. Its result is unknown.'
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
