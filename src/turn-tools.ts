import type {
  AfterToolCallContext,
  AfterToolCallResult,
  AgentTool,
  AgentToolResult,
  BeforeToolCallContext,
  BeforeToolCallResult,
} from '@mariozechner/pi-agent-core';
import type { Logger } from 'pino';
import type { ApprovalRecord } from '../adapters/store/ports/approvals.js';
import type { ToolStepResult } from '../adapters/store/ports/turn-journal.js';
import { argsHash } from '../kernel/args-hash.js';
import { ignoreError, SwitchboardError } from '../kernel/errors.js';
import { type ApprovalPolicy, canonicalJson, decide, normalizePattern } from '../moat/approval-engine.js';
import type { TraceEntry } from '../moat/honesty.js';
import type { Redactor } from '../moat/secrets.js';
import { wrapUntrusted } from '../moat/untrusted.js';
import { type AnyTool, type JsonTool, runTool, type ToolContext, toAgentTool } from '../tools/contract.js';
import { capResult } from '../tools/result-cap.js';
import type { ToolDecision } from './telemetry/genai.js';
import { journaledResult, type StepJournal } from './turn/journal.js';
import type { TurnApprovals, TurnStore } from './turn/ports.js';
import { faultPoint } from './turn/test-fault.js';

/** A tool call waiting for an operator. */
export interface ParkedCall {
  toolCallId: string;
  tool: string;
  approvalId: string;
}

export const PARKED_REASON = 'Waiting for an operator to approve this call.';

/** What the other calls of an abandoned attempt get (the model never reads it: the loop stops and the turn is retried). */
export const ABANDONED_REASON = 'Not run: this attempt of the turn was abandoned and is retried.';

/**
 * The store failed while a call's approval was being decided or asked for (a dropped
 * connection, a restarting database). The turn's attempt fails with it and is retried;
 * it is never the call's result, which the model would read as the tool's answer.
 */
export class ToolGateFailure extends SwitchboardError {
  readonly code = 'tool_gate_failed';
  override readonly retryable = true;
}

/**
 * The tools of one turn, behind the moat: before a call the approval engine
 * answers allow | ask | deny (ask creates a durable approval and parks the
 * call); after a call its output is scanned for secrets, capped without
 * breaking evidence (the full text is stored for paging) and marked as
 * untrusted data. Every call lands in the trace the honesty check reads.
 */
export class TurnTools {
  readonly parked: ParkedCall[] = [];
  readonly requested: ApprovalRecord[] = [];
  readonly trace: TraceEntry[] = [];
  /** Set when the store failed in beforeToolCall: the loop stops (stopWhen) and run.ts throws it. */
  failure?: ToolGateFailure;
  /** The calls blocked because of it. */
  readonly abandoned = new Set<string>();
  /** What the moat answered for each call of the turn (its trace span carries it). */
  readonly decisions = new Map<string, ToolDecision>();
  private readonly byName: Map<string, AnyTool>;
  private rules?: Promise<ApprovalPolicy['rules']>;

  constructor(
    private readonly d: {
      tools: AnyTool[];
      ctx: ToolContext;
      /** Rules are loaded lazily, once per turn. */
      policy: { autonomy: ApprovalPolicy['autonomy']; rules: () => Promise<ApprovalPolicy['rules']> };
      redactor: Redactor;
      store: Pick<TurnStore, 'saveToolResult'>;
      approvals: Pick<TurnApprovals, 'request'>;
      /** The turn's sender, a canonical identity: sender-scoped rules are bound to it, and it is the approvals' requester. */
      requester: string;
      channel: string;
      outputCapBytes: number;
      log: Logger;
      /** Resume, not rerun: calls an earlier attempt finished are answered from it; new ones are journaled. */
      journal?: StepJournal;
      /** The turn's span, kept with an approval it asks for (its wait span's parent), when traces are on. */
      traceparent?: () => string | undefined;
    },
  ) {
    this.byName = new Map(d.tools.map((t) => [t.name, t]));
  }

  /** Calls this attempt answers from the journal (finished before a restart, or uncertain): what the model gets. */
  private readonly answered = new Map<string, ToolStepResult>();

  agentTools(): AgentTool[] {
    const offered = this.d.tools.map((t) => toAgentTool(t, (id, args, signal) => this.call(t, id, args, signal)));
    // A tool an earlier attempt called that is not offered now (its MCP server not connected yet, the
    // planner chose otherwise): its journaled calls are still answered; a new call fails plainly.
    const gone = (this.d.journal?.toolNames() ?? []).filter((name) => !this.byName.has(name));
    return [...offered, ...gone.map((name) => toAgentTool(unavailableTool(name), (id, args, signal) => this.call(unavailableTool(name), id, args, signal)))];
  }

  /** True when an earlier attempt of the turn already began this call (the policy let it run then). */
  journaled(toolCallId: string): boolean {
    return this.d.journal?.step(toolCallId) !== undefined;
  }

  /**
   * One call of the loop, journaled: a call an earlier attempt finished is answered with
   * its result; one it started but did not finish runs again only if the tool is
   * idempotent (else the model is told it may or may not have completed); a new one
   * is journaled `started` before it runs (afterToolCall journals it `finished`).
   */
  private async call(tool: AnyTool, toolCallId: string, args: unknown, signal?: AbortSignal): Promise<AgentToolResult<unknown>> {
    const journal = this.d.journal;
    if (!journal) return this.execute(tool, args, signal);
    const step = journal.step(toolCallId);
    if (step?.status === 'finished' && step.result) {
      this.answered.set(toolCallId, step.result);
      return journaledResult(step.result);
    }
    if (step && !tool.idempotent) {
      const r = await journal.uncertain(toolCallId, tool.name, args);
      this.answered.set(toolCallId, r);
      return journaledResult(r);
    }
    await journal.started(toolCallId, tool.name);
    faultPoint('tool-started');
    return this.execute(tool, args, signal);
  }

  /** The approval code of a call that parked (its tool_end is pending, not a failure). */
  parkedCode(toolCallId: string): { code: string } | undefined {
    const p = this.parked.find((x) => x.toolCallId === toolCallId);
    const a = p && this.requested.find((r) => r.id === p.approvalId);
    return a ? { code: a.code } : undefined;
  }

  tool(name: string): AnyTool | undefined {
    return this.byName.get(name);
  }

  /** Runs a tool (also used to run an approved call on resume). */
  async execute(tool: AnyTool, args: unknown, signal?: AbortSignal): Promise<AgentToolResult<unknown>> {
    const out = await runTool(tool, args, { ...this.d.ctx, signal: signal ?? this.d.ctx.signal });
    return { content: [{ type: 'text', text: out.text }], details: out.details ?? null };
  }

  /**
   * Abandons the attempt: pi-agent-core would turn an error thrown here into the call's
   * result, so it is recorded instead, this and every later call of the attempt is blocked,
   * and the loop stops before the model reads any of it (run.ts rethrows it).
   */
  abandon(err: unknown, doing: string, toolCallId: string): BeforeToolCallResult {
    this.abandoned.add(toolCallId);
    this.failure ??= new ToolGateFailure(`the store failed while ${doing}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    this.d.log.warn({ err, turn: this.d.ctx.turnId }, `the store failed while ${doing}; the turn's attempt is abandoned and retried`);
    return { block: true, reason: ABANDONED_REASON };
  }

  beforeToolCall = async (c: BeforeToolCallContext): Promise<BeforeToolCallResult | undefined> => {
    if (this.failure) {
      this.abandoned.add(c.toolCall.id);
      return { block: true, reason: ABANDONED_REASON };
    }
    const tool = this.byName.get(c.toolCall.name);
    if (!tool) return undefined; // the loop reports unknown tools itself
    // The policy let an earlier attempt begin this call: the journal answers it (call()).
    if (this.journaled(c.toolCall.id)) {
      this.decisions.set(c.toolCall.id, { decision: 'journaled' });
      return undefined;
    }
    const args = c.args;
    const command = tool.commandOf?.(args as never);
    let rules: ApprovalPolicy['rules'];
    try {
      rules = await (this.rules ??= this.d.policy.rules());
    } catch (err) {
      this.rules = undefined;
      return this.abandon(err, 'loading the approval rules', c.toolCall.id);
    }
    const verdict = decide(
      {
        tool: tool.name,
        ...(tool.effect ? { effect: tool.effect } : {}),
        args,
        ...(command !== undefined ? { command } : {}),
        ...(tool.selfGuarded ? { selfGuarded: true } : {}),
        ...(tool.effectFromThirdParty ? { effectFromThirdParty: true } : {}),
      },
      { autonomy: this.d.policy.autonomy, rules, where: { conversationId: this.d.ctx.conversationId, sender: this.d.requester } },
    );
    this.decisions.set(c.toolCall.id, { decision: verdict.decision, tier: verdict.tier });
    if (verdict.decision === 'allow') return undefined;
    if (verdict.decision === 'deny') {
      this.trace.push({ tool: tool.name, args, ok: false, output: `refused: ${verdict.reasons.join('; ')}` });
      return { block: true, reason: `Refused by policy (${verdict.tier}): ${verdict.reasons.join('; ')}. It was not run and will not be.` };
    }
    let approval: ApprovalRecord;
    try {
      const traceparent = this.d.traceparent?.();
      approval = await this.d.approvals.request({
        ...(traceparent ? { traceparent } : {}),
        conversationId: this.d.ctx.conversationId,
        turnId: this.d.ctx.turnId,
        toolCallId: c.toolCall.id,
        tool: tool.name,
        args,
        argsHash: argsHash(canonicalJson(args)),
        pattern: normalizePattern({ args, ...(command !== undefined ? { command } : {}) }),
        tier: verdict.tier,
        reasons: verdict.reasons,
        rulePermitted: verdict.rulePermitted,
        requester: this.d.requester,
        channel: this.d.channel,
      });
    } catch (err) {
      return this.abandon(err, 'creating the approval request', c.toolCall.id);
    }
    faultPoint('approval-created');
    this.decisions.set(c.toolCall.id, { decision: 'ask', tier: verdict.tier, approvalId: approval.id });
    this.parked.push({ toolCallId: c.toolCall.id, tool: tool.name, approvalId: approval.id });
    this.requested.push(approval);
    return { block: true, reason: PARKED_REASON };
  };

  afterToolCall = async (c: AfterToolCallContext): Promise<AfterToolCallResult | undefined> => {
    if (this.parked.some((p) => p.toolCallId === c.toolCall.id)) return undefined;
    const journal = this.d.journal;
    if (journal?.failed()) return undefined; // the loop stops at its next event
    const known = this.answered.get(c.toolCall.id);
    if (known) {
      this.trace.push(known.trace as TraceEntry);
      return { content: known.content as AfterToolCallResult['content'], isError: known.isError };
    }
    faultPoint('tool-ran');
    const result = await this.present(c.toolCall.name, c.args, c.result as AgentToolResult<unknown>, c.isError);
    if (journal) {
      // present() traced the call last: the entry the honesty check reads, journaled with the result.
      const trace = this.trace[this.trace.length - 1];
      const done = await journal
        .finished(c.toolCall.id, c.toolCall.name, { content: result.content, isError: c.isError, trace })
        .then(() => true)
        .catch(ignoreError('journal.failed() is set: the loop stops at its next event'));
      if (!done) return undefined;
      faultPoint('tool-finished');
    }
    return { content: result.content, isError: c.isError };
  };

  /** What the model sees of a result: secrets redacted, capped (full text kept for paging), marked untrusted. */
  async present(toolName: string, args: unknown, result: AgentToolResult<unknown>, isError: boolean): Promise<AgentToolResult<unknown>> {
    const raw = result.content.map((p) => (p.type === 'text' ? p.text : '[image]')).join('\n');
    const { text: redacted } = this.d.redactor.redact(raw);
    let shown = redacted;
    if (Buffer.byteLength(redacted) > this.d.outputCapBytes) {
      const id = await this.d.store.saveToolResult(this.d.ctx.turnId, toolName, redacted);
      shown = capResult(redacted, this.d.outputCapBytes, `call tool_result_page with resultId "${id}" to read on`).text;
    }
    this.trace.push({ tool: toolName, args, ok: !isError, output: redacted.slice(0, 2_000) });
    return { content: [{ type: 'text', text: wrapUntrusted(`${toolName}`, shown) }], details: result.details };
  }
}

/** Stands in for a tool that an earlier attempt of the turn called and that is not offered now. */
function unavailableTool(name: string): JsonTool {
  return {
    name,
    description: `${name} (not available right now)`,
    parameters: { type: 'object', properties: {}, additionalProperties: true },
    execute: async () => {
      throw new Error(`the tool ${name} is not available right now`);
    },
  };
}
