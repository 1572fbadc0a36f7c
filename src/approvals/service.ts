import type { Logger } from 'pino';
import type { JobQueue } from '../../adapters/queue/port.js';
import type { AllowRuleRecord, ApprovalRecord, ApprovalRepository, NewApproval } from '../../adapters/store/ports/approvals.js';
import type { GatewayStore } from '../../adapters/store/ports/index.js';
import { formatIdentity, type Identity } from '../../kernel/identity.js';
import type { DrainJob, TimerJob } from '../../kernel/jobs.js';
import { visibleText } from '../../moat/approval-display.js';
import { checkVariable, NO_RULE_PREFIX, RULE_SCOPES, type RuleScope, ruleTarget } from '../../moat/approval-engine.js';
import type { Config } from '../config.js';
import { linkAnswerToParked, recordApprovalWait } from '../telemetry/approval-spans.js';
import { ATTR, inSpan, jobTrace, type Span } from '../telemetry/tracer.js';
import type { EventHub } from '../webhooks/events.js';
import type { AnswerDecision } from './parse.js';
import { isConfiguredOperator, requesterMayAnswer } from './rights.js';

export type { TimerJob } from '../../kernel/jobs.js';

/** Who is answering, as the channel knows them: a whole identity (kernel/identity.ts). */
export interface Actor extends Identity {
  /** The channel says this identity is a configured operator. */
  operator: boolean;
}

/** How far an "always allow" reaches: its scope (default conversation) and the word positions that may vary. */
export interface AnswerOptions {
  scope?: RuleScope;
  variable?: number[];
}

/** Why an answer was refused: a stable code (the HTTP API maps it to a status in src/http/errors.ts). */
export type ApprovalRefusal = 'invalid_value' | 'not_operator' | 'unknown_code' | 'always_not_permitted' | 'already_decided' | 'expired' | 'too_many_attempts';

export type AnswerResult =
  | { ok: true; approval: ApprovalRecord; message: string; rule?: AllowRuleRecord }
  | { ok: false; code: ApprovalRefusal; message: string; approval?: ApprovalRecord };

/** Wrong codes a non-operator may try in CODE_ATTEMPT_WINDOW_MS before further answers are refused (codes are 5 characters of 25). */
export const CODE_ATTEMPTS = 10;
export const CODE_ATTEMPT_WINDOW_MS = 10 * 60_000;

const SCOPE_PHRASE: Record<RuleScope, string> = {
  conversation: 'in this conversation',
  sender: 'for this sender, in any conversation',
  global: 'everywhere (global)',
};

/**
 * Operator approvals, channel-agnostic: requests are durable rows with a
 * deadline job; answers are authorized, single-use, atomic and audited; when a
 * turn has no pending approval left it is unparked and its conversation drained.
 */
export class ApprovalService {
  constructor(
    private readonly deps: {
      approvals: ApprovalRepository;
      store: GatewayStore;
      queue: JobQueue<DrainJob>;
      timers: JobQueue<TimerJob>;
      config: Config;
      log: Logger;
      events?: EventHub;
      /** Posts a request to the operator channel (approvals.operatorChannel); never blocks the turn. */
      notify?: (approval: ApprovalRecord) => Promise<void>;
    },
  ) {}

  /** A configured operator of the identity's own channel (`approvals.operators.<channel>`): an id listed for one channel is nobody on another. */
  isOperator(who: Identity): boolean {
    return isConfiguredOperator(this.deps.config.approvals, who);
  }

  /** Whether the person who asked may answer this request themselves (what answer() lets them do). */
  requesterMayAnswer(a: Pick<ApprovalRecord, 'requester' | 'tier'>): boolean {
    return requesterMayAnswer(this.deps.config.approvals, a.requester, a.tier);
  }

  async request(a: Omit<NewApproval, 'expiresAt'>): Promise<ApprovalRecord> {
    const expiresAt = new Date(Date.now() + this.deps.config.approvals.timeoutMs);
    // Audited in the same statement; a retried attempt (same turn, same tool call) gets the row
    // already there and asks nobody again: no second audit row, operator post, webhook or deadline job.
    const { created, ...row } = await this.deps.approvals.create({ ...a, expiresAt });
    if (!created) return row;
    if (this.deps.notify)
      void this.deps
        .notify(row)
        .catch((err: unknown) =>
          this.deps.log.warn({ err: (err as Error).message, approval: row.code }, 'could not post the approval request to the operator channel'),
        );
    this.deps.events?.emit('approval.requested', {
      code: row.code,
      conversation: row.conversationId,
      turn: row.turnId,
      tool: row.tool,
      arguments: row.args,
      tier: row.tier,
      expiresAt: new Date(row.expiresAt).toISOString(),
    });
    const delay = Math.max(0, new Date(row.expiresAt).getTime() - Date.now()) + 250;
    await this.deps.timers.add({ kind: 'expire-approval', approvalId: row.id }, { delayMs: delay }).catch((err: unknown) => {
      // The periodic sweep expires it anyway.
      this.deps.log.warn({ err, approval: row.id }, 'could not schedule the approval deadline');
    });
    return row;
  }

  /**
   * An answer is a span (the resumed turn's drain continues its trace: the turn, the call). It links the turn that
   * parked, and the approval's `approval wait` span (in the trace of the message that asked) links it.
   */
  answer(code: string, decision: AnswerDecision, actor: Actor, opts: AnswerOptions = {}): Promise<AnswerResult> {
    return inSpan('approval answer', { attributes: { 'switchboard.approval.decision': decision, [ATTR.channel]: actor.channel } }, async (span) => {
      const r = await this.answerOnce(code, decision, actor, opts, span);
      span.setAttribute('switchboard.approval.answer', r.ok ? 'ok' : r.code);
      if (r.approval) {
        span.setAttributes({ [ATTR.approvalId]: r.approval.id, [ATTR.approvalStatus]: r.approval.status });
        linkAnswerToParked(span, r.approval);
      }
      return r;
    });
  }

  private async answerOnce(code: string, decision: AnswerDecision, actor: Actor, opts: AnswerOptions, span?: Span): Promise<AnswerResult> {
    const { approvals } = this.deps;
    const normalized = code.trim().toUpperCase();
    const who = formatIdentity(actor);
    // Guessing codes: after too many wrong ones a non-operator is refused for a while, whatever the code.
    if (!actor.operator && (await approvals.auditCount(who, 'approval.code_refused', CODE_ATTEMPT_WINDOW_MS)) >= CODE_ATTEMPTS) {
      return {
        ok: false,
        code: 'too_many_attempts',
        message: `Too many wrong approval codes; try again in ${Math.round(CODE_ATTEMPT_WINDOW_MS / 60_000)} minutes.`,
      };
    }
    const current = await approvals.byCode(normalized);
    // The requester is the whole identity that asked (channel and id), not an id that another channel may also use.
    const isRequester = !!current && current.requester === who;
    // A chat request is posted where the conversation is: people on that channel may have seen
    // the code, and are told it is not theirs to answer. Anywhere else (the HTTP API, another
    // channel) a code that is not yours reads exactly like an unknown one.
    const couldHaveSeen = !!current && current.channel === actor.channel && actor.channel !== 'http';
    if (!current || (!actor.operator && !isRequester && !couldHaveSeen)) {
      // Unknown, and someone else's: one answer, so a code's existence does not leak.
      if (!actor.operator) await approvals.audit(who, 'approval.code_refused', normalized, { decision, known: !!current });
      return { ok: false, code: 'unknown_code', message: `There is no approval request with code ${normalized}.` };
    }
    if (!actor.operator) {
      const mayAsRequester = isRequester && current.tier !== 'dangerous' && (this.deps.config.approvals.requesterMay as string[]).includes(current.tier);
      if (!mayAsRequester || decision === 'always') {
        // Counted with the wrong codes unless it is the requester's own request.
        await approvals.audit(who, isRequester ? 'approval.refused' : 'approval.code_refused', normalized, { reason: 'not an operator', decision });
        return { ok: false, code: 'not_operator', message: `Only an operator can answer approval ${normalized}.`, approval: current };
      }
    }
    const scope = opts.scope ?? 'conversation';
    const variable = opts.variable ?? [];
    if (decision !== 'always' && (opts.scope !== undefined || variable.length)) {
      return { ok: false, code: 'invalid_value', message: 'A scope or variable positions apply only to "always".', approval: current };
    }
    if (!RULE_SCOPES.includes(scope))
      return { ok: false, code: 'invalid_value', message: `The scope must be one of ${RULE_SCOPES.join(', ')}.`, approval: current };
    if (decision === 'always' && scope === 'sender' && !current.requester)
      return {
        ok: false,
        code: 'invalid_value',
        message: `Approval ${normalized} has no known sender; choose the conversation or global scope.`,
        approval: current,
      };
    const kind = decision === 'always' ? ruleKindOf(current) : undefined;
    if (decision === 'always' && (!current.rulePermitted || !kind)) {
      const why = current.reasons.find((r) => r.startsWith(NO_RULE_PREFIX));
      const because = why ? why.slice(NO_RULE_PREFIX.length) : `${current.tier} tier`;
      return {
        ok: false,
        code: 'always_not_permitted',
        message: `"Always allow" is not possible for ${normalized}: ${because}. Answer YES or NO.`,
        approval: current,
      };
    }
    if (kind) {
      const bad = checkVariable(current.pattern, kind, variable);
      if (bad) return { ok: false, code: 'invalid_value', message: `Cannot make that rule: ${bad}.`, approval: current };
    }
    const scopeKey = scope === 'global' ? '' : scope === 'sender' ? (current.requester ?? '') : current.conversationId;
    // The decision, its rule, its audit rows and the unpark of the turn: one transaction.
    const outcome = await approvals.answer({
      code: normalized,
      decision: decision === 'deny' ? 'denied' : 'approved',
      by: who,
      via: actor.channel,
      ...(kind ? { rule: { scope, scopeKey, variable, kind } } : {}),
    });
    if (!outcome.ok) {
      if (outcome.reason === 'expired') {
        await this.expire();
        return {
          ok: false,
          code: 'expired',
          message: `Approval ${normalized} has expired; the call was not run.`,
          ...(outcome.approval ? { approval: outcome.approval } : {}),
        };
      }
      if (outcome.reason === 'already_decided') {
        const a = outcome.approval!;
        // The same answer again (its reply was lost): what it did stands, and it is said so.
        const again = await this.sameAnswer(a, decision, who, kind ? { scope, scopeKey, variable } : undefined);
        if (again) {
          await this.resumeIfReady(a.turnId, { drain: true });
          return {
            ok: true,
            approval: a,
            message: `${normalized} already ${decision === 'deny' ? 'refused' : 'approved'} by you.`,
            ...(again.rule ? { rule: again.rule } : {}),
          };
        }
        return {
          ok: false,
          code: 'already_decided',
          message: `Approval ${normalized} was already ${a.status === 'executed' ? 'approved' : a.status} by ${a.decidedBy ?? 'someone'}.`,
          approval: a,
        };
      }
      return { ok: false, code: 'unknown_code', message: `There is no approval request with code ${normalized}.` };
    }
    const { approval: a, rule } = outcome;
    // Decided (once: only this answer changed the row): the wait, in the trace of the message whose turn parked.
    recordApprovalWait(a, span ? { answer: span } : {});
    this.deps.events?.emit('approval.decided', { code: a.code, conversation: a.conversationId, tool: a.tool, status: a.status, always: a.always, by: who });
    // Committed: the turn is runnable. A lost drain job is the recovery sweep's (readyParkedTurns, stuck inbox rows).
    if (outcome.unparked) await this.drain(outcome.unparked);
    const verb =
      a.status === 'approved'
        ? rule
          ? `approved, and always allowed from now on ${SCOPE_PHRASE[scope]} (rule #${rule.id}: exactly ${a.tool} ${visibleText(rule.pattern)}${rule.variable.length ? `, any plain value at position ${rule.variable.join(', ')}` : ''})`
          : 'approved'
        : 'refused';
    return { ok: true, approval: a, message: `${normalized} ${verb} by ${actor.id}.`, ...(rule ? { rule } : {}) };
  }

  /**
   * Whether a decided approval is what this answer would have made: the same decider, the
   * same decision, and for "always" the same rule (which is returned). Then a retry of an
   * answer whose reply was lost succeeds instead of reading "already decided".
   */
  private async sameAnswer(
    a: ApprovalRecord,
    decision: AnswerDecision,
    who: string,
    rule: { scope: RuleScope; scopeKey: string; variable: number[] } | undefined,
  ): Promise<{ rule?: AllowRuleRecord } | undefined> {
    if (a.decidedBy !== who) return undefined;
    const approved = a.status === 'approved' || a.status === 'executed';
    if (decision === 'deny') return a.status === 'denied' ? {} : undefined;
    if (!approved || a.always !== (decision === 'always')) return undefined;
    if (decision !== 'always') return {};
    if (!rule) return undefined;
    const variable = [...new Set(rule.variable)].sort((x, y) => x - y).join();
    const made = (await this.deps.approvals.rules()).find(
      (r) => r.tool === a.tool && r.pattern === a.pattern && r.scope === rule.scope && r.scopeKey === rule.scopeKey && r.variable.join() === variable,
    );
    return made ? { rule: made } : undefined;
  }

  private async drain(conversationId: string): Promise<void> {
    await this.deps.queue.add({ conversationId, ...jobTrace() }, { dedupKey: conversationId });
  }

  /** Every "always allow" rule. */
  rules(): Promise<AllowRuleRecord[]> {
    return this.deps.approvals.rules();
  }

  /** Deletes a rule (audited). */
  async deleteRule(id: number, actor: Actor): Promise<AllowRuleRecord | undefined> {
    const r = await this.deps.approvals.deleteRule(id);
    if (r)
      await this.deps.approvals.audit(formatIdentity(actor), 'rule.deleted', `rule:${id}`, {
        tool: r.tool,
        pattern: r.pattern,
        scope: r.scope,
        scopeKey: r.scopeKey,
      });
    return r;
  }

  /** An approval by code, any status. */
  byCode(code: string): Promise<ApprovalRecord | undefined> {
    return this.deps.approvals.byCode(code.trim().toUpperCase());
  }

  /** Expires what is due (fail-closed) and resumes the turns concerned. Returns how many expired. */
  async expire(): Promise<number> {
    const expired = await this.deps.approvals.expireDue();
    for (const a of expired) {
      recordApprovalWait(a);
      await this.deps.approvals.audit('deadline', 'approval.expired', a.code, { approval: a.id });
      this.deps.events?.emit('approval.decided', { code: a.code, conversation: a.conversationId, tool: a.tool, status: 'expired', by: 'deadline' });
      await this.resumeIfReady(a.turnId);
    }
    return expired.length;
  }

  /**
   * Before a turn parks: its pending approvals that this park does not wait for (asked by an
   * attempt that failed after asking, then retried) are expired, so they cannot hold it parked.
   */
  async supersede(turnId: string, keep: string[]): Promise<void> {
    for (const a of await this.deps.approvals.supersede(turnId, keep)) {
      recordApprovalWait(a, { superseded: true });
      await this.deps.approvals.audit('superseded', 'approval.superseded', a.code, { approval: a.id, turn: turnId });
    }
  }

  /**
   * An operator took the conversation over (HandoffService.take): the pending approvals of its
   * parked turns are withdrawn (expired, decided by 'takeover'; an answer afterwards is refused as
   * expired) and those turns are closed without running the model again. Each withdrawal is audited
   * (`approval.withdrawn`), its wait span recorded, and emitted as decided. Returns the closed turns.
   */
  async withdrawForTakeover(conversationId: string, operator: string): Promise<string[]> {
    const r = await this.deps.approvals.withdrawParked(conversationId);
    for (const a of r.approvals) {
      recordApprovalWait(a, { superseded: true });
      await this.deps.approvals.audit('takeover', 'approval.withdrawn', a.code, { approval: a.id, turn: a.turnId, reason: 'taken over', operator });
      this.deps.events?.emit('approval.decided', { code: a.code, conversation: a.conversationId, tool: a.tool, status: 'expired', by: 'takeover' });
    }
    return r.turns;
  }

  /**
   * A parked turn whose approvals are all decided runs again. With `drain`, its conversation
   * is drained even when the turn was already unparked (by an answer whose drain job was lost).
   */
  async resumeIfReady(turnId: string, opts: { drain?: boolean } = {}): Promise<void> {
    const rows = await this.deps.approvals.forTurn(turnId);
    if (rows.some((r) => r.status === 'pending')) return;
    const conversationId = (await this.deps.store.unparkTurn(turnId)) ?? (opts.drain ? rows[0]?.conversationId : undefined);
    if (conversationId) await this.drain(conversationId);
  }

  /**
   * The recovery sweep's part: parked turns none of whose approvals is pending (an answer or
   * an expiry whose unpark was lost) are unparked and their conversations drained. Returns how many.
   */
  async resumeDecided(): Promise<number> {
    const turns = await this.deps.approvals.readyParkedTurns();
    for (const turnId of turns) await this.resumeIfReady(turnId);
    return turns.length;
  }

  pending(): Promise<ApprovalRecord[]> {
    return this.deps.approvals.pending();
  }

  /** The unexpired pending approvals of the conversation's parked turns (what its new messages wait for), oldest first. */
  pendingForConversation(conversationKey: string): Promise<ApprovalRecord[]> {
    return this.deps.approvals.pendingForConversation(conversationKey);
  }
}

/**
 * What a rule made from this approval binds: a shell command (its pattern is the canonical
 * command of the `command` argument) or the arguments as JSON. Undefined: no rule can be made.
 */
function ruleKindOf(a: ApprovalRecord): 'command' | 'args' | undefined {
  const command = (a.args as { command?: unknown } | null)?.command;
  if (typeof command === 'string') {
    const t = ruleTarget({ args: a.args, command });
    if (t.ok && t.pattern === a.pattern) return 'command';
  }
  const t = ruleTarget({ args: a.args });
  return t.ok && t.pattern === a.pattern ? 'args' : undefined;
}
