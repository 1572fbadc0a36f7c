import type { Message } from '@mariozechner/pi-ai';
import { queueModeFor } from '../../kernel/queue-modes.js';
import type { TurnEventSink } from '../../kernel/turn-events.js';
import { workspaceFor } from '../../tools/workspace.js';
import { TurnTools } from '../turn-tools.js';
import type { StepJournal } from './journal.js';
import { messageText, toUserMessage } from './messages.js';
import type { ParkedState } from './park.js';
import type { TurnDeps, TurnJob } from './ports.js';
import type { Prepared } from './prepare.js';

/** The tools phase's output: the turn's tools behind the moat, and the steer-mode hooks of the loop. */
export interface ToolsPhase {
  tools: TurnTools;
  beforeToolCall: TurnTools['beforeToolCall'];
  getSteeringMessages?: () => Promise<Message[]>;
}

/**
 * The tools of the turn (src/turn-tools.ts: approval engine, output redaction, caps, trace),
 * and in steer mode the two hooks that let a message that arrives meanwhile join the turn.
 */
export function turnTools(
  job: TurnJob,
  deps: TurnDeps,
  p: Prepared,
  parked: ParkedState | null,
  sink: TurnEventSink,
  journal: StepJournal,
  signal?: AbortSignal,
): ToolsPhase {
  const { conversation: conv, turn, context } = job;
  const tools: TurnTools = new TurnTools({
    tools: p.offered,
    ctx: {
      conversationId: conv.id,
      turnId: turn.id,
      senderId: p.sender,
      workspace: workspaceFor(deps.config.dataDir, conv.id),
      signal: signal ?? new AbortController().signal,
      evidence: () => ({
        userMessages: [...(context.history as unknown as Message[]), ...p.contextMessages.messages, ...p.prompts]
          .filter((m) => m.role === 'user')
          .map(messageText),
        toolOutputs: tools.trace.filter((t) => t.ok).map((t) => t.output ?? ''),
      }),
    },
    // Operator rules are read when a call first needs a decision, not on every turn.
    policy: { autonomy: deps.config.approvals.autonomy, rules: () => deps.approvalStore.rulesFor(conv.id, p.sender) },
    redactor: p.secrets.redactor,
    store: deps.store,
    approvals: deps.approvals,
    requester: p.sender,
    channel: conv.channel,
    outputCapBytes: deps.config.tools.outputCapBytes,
    log: deps.log,
    journal,
    ...(job.trace ? { traceparent: () => job.trace!.traceparent() } : {}),
  });
  if (parked) tools.trace.push(...parked.trace);

  // steer: messages that arrive meanwhile join this turn at its next model call, and
  // tool calls not started yet are skipped so the new message is heard first.
  const steering = queueModeFor(deps.config.conversations, conv.channel, conv.queueMode) === 'steer';
  const beforeToolCall: TurnTools['beforeToolCall'] = async (c) => {
    if (steering && !tools.failure && !tools.journaled(c.toolCall.id)) {
      let waiting: number;
      try {
        waiting = (await deps.store.waitingCount(conv.key)).waiting;
      } catch (err) {
        return tools.abandon(err, 'checking for newer messages', c.toolCall.id);
      }
      if (waiting > 0) return { block: true, reason: 'Skipped: the user sent a new message, which comes first. Call it again if it is still needed.' };
    }
    return tools.beforeToolCall(c);
  };
  if (!steering) return { tools, beforeToolCall };
  const getSteeringMessages = async (): Promise<Message[]> => {
    const rows = await deps.store.claimInto(turn.id, conv.id);
    if (!rows.length) return [];
    sink.push({ type: 'turn_start', turnId: turn.id, conversationId: conv.id, inboxIds: rows.map((r) => r.id), attempt: turn.attempt });
    return rows.map(toUserMessage);
  };
  return { tools, beforeToolCall, getSteeringMessages };
}
