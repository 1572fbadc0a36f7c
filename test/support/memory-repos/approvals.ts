import { randomUUID } from 'node:crypto';
import { newCode } from '../../../adapters/store/approvals.js';
import type {
  AnswerOutcome,
  AnswerWrite,
  ApprovalRepository,
  ApprovalRow,
  AuditEntry,
  DecideOutcome,
  NewApproval,
  NewRule,
  RuleRow,
} from '../../../adapters/store/ports/approvals.js';
import type { AllowRule } from '../../../moat/approval-engine.js';
import { copy, json, type Tables } from './tables.js';

export class MemoryApprovals implements ApprovalRepository {
  constructor(private readonly t: Tables) {}

  async create(a: NewApproval): Promise<ApprovalRow> {
    const existing = this.t.approvals.find((x) => x.turn_id === a.turnId && x.tool_call_id === a.toolCallId);
    if (existing) return copy(existing);
    let code = newCode();
    while (this.t.approvals.some((x) => x.status === 'pending' && x.code === code)) code = newCode();
    const row: ApprovalRow = {
      id: 'ap_' + randomUUID(),
      code,
      conversation_id: a.conversationId,
      turn_id: a.turnId,
      tool_call_id: a.toolCallId,
      tool: a.tool,
      args: json(a.args ?? null),
      args_hash: a.argsHash,
      pattern: a.pattern,
      tier: a.tier,
      reasons: json(a.reasons),
      rule_permitted: a.rulePermitted,
      requester: a.requester,
      channel: a.channel,
      status: 'pending',
      always: false,
      decided_by: null,
      decided_via: null,
      decided_at: null,
      expires_at: new Date(a.expiresAt),
      created_at: this.t.now(),
    };
    this.t.approvals.push(row);
    return copy(row);
  }

  async pending(): Promise<ApprovalRow[]> {
    return this.t.approvals
      .filter((a) => a.status === 'pending')
      .sort(byCreated)
      .map(copy);
  }

  async pendingForConversation(conversationKey: string): Promise<ApprovalRow[]> {
    const conv = [...this.t.conversations.values()].find((c) => c.key === conversationKey);
    const now = this.t.now();
    return this.t.approvals
      .filter((a) => a.conversation_id === conv?.id && a.status === 'pending' && a.expires_at > now && this.t.turns.get(a.turn_id)?.status === 'parked')
      .sort(byCreated)
      .map(copy);
  }

  async byCode(code: string): Promise<ApprovalRow | undefined> {
    const found = this.t.approvals
      .filter((a) => a.code === code)
      .sort((a, b) => Number(b.status === 'pending') - Number(a.status === 'pending') || b.created_at.getTime() - a.created_at.getTime())[0];
    return found && copy(found);
  }

  async get(id: string): Promise<ApprovalRow | undefined> {
    const a = this.t.approvals.find((x) => x.id === id);
    return a && copy(a);
  }

  async forTurn(turnId: string): Promise<ApprovalRow[]> {
    return this.t.approvals
      .filter((a) => a.turn_id === turnId)
      .sort(byCreated)
      .map(copy);
  }

  async decide(code: string, decision: 'approved' | 'denied', by: string, via: string, always = false): Promise<DecideOutcome> {
    const now = this.t.now();
    const a = this.t.approvals.find((x) => x.code === code && x.status === 'pending' && x.expires_at > now);
    if (a) {
      Object.assign(a, { status: decision, decided_by: by, decided_via: via, decided_at: now, always: always && decision === 'approved' });
      return { ok: true, approval: copy(a) };
    }
    const existing = await this.byCode(code);
    if (!existing) return { ok: false, reason: 'unknown' };
    if (existing.status === 'pending' || existing.status === 'expired') return { ok: false, reason: 'expired', approval: existing };
    return { ok: false, reason: 'already_decided', approval: existing };
  }

  /** Nothing awaits between the writes, so they happen together, as the SQL transaction's do. */
  async answer(w: AnswerWrite): Promise<AnswerOutcome> {
    const now = this.t.now();
    const a = this.t.approvals.find((x) => x.code === w.code && x.status === 'pending' && x.expires_at > now);
    if (!a) return (await this.decide(w.code, w.decision, w.by, w.via)) as AnswerOutcome;
    Object.assign(a, { status: w.decision, decided_by: w.by, decided_via: w.via, decided_at: now, always: !!w.rule && w.decision === 'approved' });
    const rule = a.always && w.rule ? this.addRuleNow({ ...w.rule, tool: a.tool, pattern: a.pattern, by: w.by }) : undefined;
    if (rule)
      this.auditNow(w.by, 'rule.created', a.code, {
        rule: rule.id,
        tool: rule.tool,
        pattern: rule.pattern,
        scope: rule.scope,
        scopeKey: rule.scope_key,
        variable: rule.variable,
      });
    this.auditNow(w.by, `approval.${a.status}`, a.code, {
      approval: a.id,
      always: a.always,
      via: w.via,
      ...(rule ? { rule: rule.id, scope: rule.scope } : {}),
    });
    const turn = this.t.turns.get(a.turn_id);
    let unparked: string | undefined;
    if (turn?.status === 'parked' && !this.t.approvals.some((x) => x.turn_id === a.turn_id && x.status === 'pending')) {
      turn.status = 'running';
      unparked = turn.conversation_id;
    }
    return { ok: true, approval: copy(a), ...(rule ? { rule: copy(rule) } : {}), ...(unparked ? { unparked } : {}) };
  }

  async supersede(turnId: string, keep: string[]): Promise<ApprovalRow[]> {
    const now = this.t.now();
    const gone = this.t.approvals.filter((a) => a.turn_id === turnId && a.status === 'pending' && !keep.includes(a.id));
    for (const a of gone) Object.assign(a, { status: 'expired', decided_by: 'superseded', decided_at: now });
    return gone.map(copy);
  }

  async readyParkedTurns(): Promise<string[]> {
    return [...this.t.turns.values()]
      .filter((t) => t.status === 'parked' && !this.t.approvals.some((a) => a.turn_id === t.id && a.status === 'pending'))
      .sort((a, b) => a.started_at.getTime() - b.started_at.getTime())
      .map((t) => t.id);
  }

  async expireDue(): Promise<ApprovalRow[]> {
    const now = this.t.now();
    const due = this.t.approvals.filter((a) => a.status === 'pending' && a.expires_at <= now);
    for (const a of due) Object.assign(a, { status: 'expired', decided_at: now });
    return due.map(copy);
  }

  async markExecuted(id: string): Promise<boolean> {
    const a = this.t.approvals.find((x) => x.id === id && x.status === 'approved');
    if (!a) return false;
    a.status = 'executed';
    return true;
  }

  async addRule(r: NewRule): Promise<RuleRow> {
    return copy(this.addRuleNow(r));
  }

  private addRuleNow(r: NewRule): RuleRow {
    const variable = [...new Set(r.variable ?? [])].sort((a, b) => a - b);
    const same = this.t.rules.find(
      (x) => x.tool === r.tool && x.pattern === r.pattern && x.scope === r.scope && x.scope_key === r.scopeKey && x.variable.join() === variable.join(),
    );
    if (same) return same;
    const row: RuleRow = {
      id: this.t.nextId(),
      tool: r.tool,
      pattern: r.pattern,
      scope: r.scope,
      scope_key: r.scopeKey,
      variable,
      kind: r.kind,
      created_by: r.by,
      created_at: this.t.now(),
    };
    this.t.rules.push(row);
    return row;
  }

  async rules(): Promise<RuleRow[]> {
    return [...this.t.rules].sort((a, b) => a.id - b.id).map(copy);
  }

  async rulesFor(conversationId: string, sender: string): Promise<AllowRule[]> {
    return (await this.rules())
      .filter((r) => r.scope === 'global' || (r.scope === 'conversation' && r.scope_key === conversationId) || (r.scope === 'sender' && r.scope_key === sender))
      .map((r) => ({ id: r.id, tool: r.tool, pattern: r.pattern, scope: r.scope, scopeKey: r.scope_key, variable: r.variable, kind: r.kind }));
  }

  async rule(id: number): Promise<RuleRow | undefined> {
    const r = this.t.rules.find((x) => x.id === id);
    return r && copy(r);
  }

  async deleteRule(id: number): Promise<RuleRow | undefined> {
    const i = this.t.rules.findIndex((x) => x.id === id);
    return i < 0 ? undefined : this.t.rules.splice(i, 1)[0];
  }

  async audit(actor: string, action: string, subject: string | null, details: unknown): Promise<void> {
    this.auditNow(actor, action, subject, details);
  }

  private auditNow(actor: string, action: string, subject: string | null, details: unknown): void {
    this.t.audit.push({ id: this.t.nextId(), at: this.t.now(), actor, action, subject, details: json(details ?? null) });
  }

  async auditCount(actor: string, action: string, windowMs: number): Promise<number> {
    const since = Date.now() - windowMs;
    return this.t.audit.filter((e) => e.actor === actor && e.action === action && e.at.getTime() > since).length;
  }

  async auditTrail(subject: string): Promise<AuditEntry[]> {
    return this.t.audit.filter((e) => e.subject === subject).map((e) => ({ at: e.at, actor: e.actor, action: e.action, details: copy(e.details) }));
  }
}

function byCreated(a: ApprovalRow, b: ApprovalRow): number {
  return a.created_at.getTime() - b.created_at.getTime();
}
