import { randomUUID } from 'node:crypto';
import { newCode } from '../../../adapters/store/approvals.js';
import type {
  AllowRuleRecord,
  AnswerOutcome,
  AnswerWrite,
  ApprovalRecord,
  ApprovalRepository,
  AuditEntry,
  CreatedApproval,
  DecideOutcome,
  NewApproval,
  NewRule,
} from '../../../adapters/store/ports/approvals.js';
import type { AllowRule } from '../../../moat/approval-engine.js';
import { copy, json, type MessageRecord, type Tables } from './tables.js';

export class MemoryApprovals implements ApprovalRepository {
  constructor(private readonly t: Tables) {}

  async create(a: NewApproval): Promise<CreatedApproval> {
    const existing = this.t.approvals.find((x) => x.turnId === a.turnId && x.toolCallId === a.toolCallId);
    if (existing) {
      if (a.traceparent) existing.traceparent = a.traceparent;
      return { ...copy(existing), created: false };
    }
    let code = newCode();
    while (this.t.approvals.some((x) => x.status === 'pending' && x.code === code)) code = newCode();
    const row: ApprovalRecord = {
      id: 'ap_' + randomUUID(),
      code,
      conversationId: a.conversationId,
      turnId: a.turnId,
      toolCallId: a.toolCallId,
      tool: a.tool,
      args: json(a.args ?? null),
      argsHash: a.argsHash,
      pattern: a.pattern,
      tier: a.tier,
      reasons: json(a.reasons),
      rulePermitted: a.rulePermitted,
      requester: a.requester,
      channel: a.channel,
      status: 'pending',
      always: false,
      decidedBy: null,
      decidedVia: null,
      decidedAt: null,
      expiresAt: new Date(a.expiresAt),
      createdAt: this.t.now(),
      ...(a.traceparent ? { traceparent: a.traceparent } : {}),
    };
    this.t.approvals.push(row);
    this.auditNow(a.requester ?? 'unknown', 'approval.requested', code, { approval: row.id, tool: row.tool, tier: row.tier, turn: row.turnId });
    return { ...copy(row), created: true };
  }

  async pending(): Promise<ApprovalRecord[]> {
    return this.t.approvals
      .filter((a) => a.status === 'pending')
      .sort(byCreated)
      .map(copy);
  }

  async pendingForConversation(conversationKey: string): Promise<ApprovalRecord[]> {
    const conv = [...this.t.conversations.values()].find((c) => c.key === conversationKey);
    const now = this.t.now();
    return this.t.approvals
      .filter((a) => a.conversationId === conv?.id && a.status === 'pending' && a.expiresAt > now && this.t.turns.get(a.turnId)?.status === 'parked')
      .sort(byCreated)
      .map(copy);
  }

  async byCode(code: string): Promise<ApprovalRecord | undefined> {
    const found = this.t.approvals
      .filter((a) => a.code === code)
      .sort((a, b) => Number(b.status === 'pending') - Number(a.status === 'pending') || b.createdAt.getTime() - a.createdAt.getTime())[0];
    return found && copy(found);
  }

  async get(id: string): Promise<ApprovalRecord | undefined> {
    const a = this.t.approvals.find((x) => x.id === id);
    return a && copy(a);
  }

  async forTurn(turnId: string): Promise<ApprovalRecord[]> {
    return this.t.approvals
      .filter((a) => a.turnId === turnId)
      .sort(byCreated)
      .map(copy);
  }

  async decide(code: string, decision: 'approved' | 'denied', by: string, via: string, always = false): Promise<DecideOutcome> {
    const now = this.t.now();
    const a = this.t.approvals.find((x) => x.code === code && x.status === 'pending' && x.expiresAt > now);
    if (a) {
      Object.assign(a, { status: decision, decidedBy: by, decidedVia: via, decidedAt: now, always: always && decision === 'approved' });
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
    const a = this.t.approvals.find((x) => x.code === w.code && x.status === 'pending' && x.expiresAt > now);
    if (!a) return (await this.decide(w.code, w.decision, w.by, w.via)) as AnswerOutcome;
    Object.assign(a, { status: w.decision, decidedBy: w.by, decidedVia: w.via, decidedAt: now, always: !!w.rule && w.decision === 'approved' });
    const rule = a.always && w.rule ? this.addRuleNow({ ...w.rule, tool: a.tool, pattern: a.pattern, by: w.by }) : undefined;
    if (rule)
      this.auditNow(w.by, 'rule.created', a.code, {
        rule: rule.id,
        tool: rule.tool,
        pattern: rule.pattern,
        scope: rule.scope,
        scopeKey: rule.scopeKey,
        variable: rule.variable,
      });
    this.auditNow(w.by, `approval.${a.status}`, a.code, {
      approval: a.id,
      always: a.always,
      via: w.via,
      ...(rule ? { rule: rule.id, scope: rule.scope } : {}),
    });
    const turn = this.t.turns.get(a.turnId);
    let unparked: string | undefined;
    if (turn?.status === 'parked' && !this.t.approvals.some((x) => x.turnId === a.turnId && x.status === 'pending')) {
      turn.status = 'running';
      unparked = turn.conversationId;
    }
    return { ok: true, approval: copy(a), ...(rule ? { rule: copy(rule) } : {}), ...(unparked ? { unparked } : {}) };
  }

  async supersede(turnId: string, keep: string[]): Promise<ApprovalRecord[]> {
    const now = this.t.now();
    const gone = this.t.approvals.filter((a) => a.turnId === turnId && a.status === 'pending' && !keep.includes(a.id));
    for (const a of gone) Object.assign(a, { status: 'expired', decidedBy: 'superseded', decidedAt: now });
    return gone.map(copy);
  }

  async withdrawParked(conversationId: string): Promise<{ approvals: ApprovalRecord[]; turns: string[] }> {
    const now = this.t.now();
    const parked = [...this.t.turns.values()].filter((t) => t.conversationId === conversationId && t.status === 'parked');
    const ids = new Set(parked.map((t) => t.id));
    const gone = this.t.approvals.filter((a) => ids.has(a.turnId) && a.status === 'pending');
    for (const a of gone) Object.assign(a, { status: 'expired', decidedBy: 'takeover', decidedAt: now });
    for (const t of parked) Object.assign(t, { status: 'done', finishedAt: now, finishReason: 'aborted', state: null });
    for (const r of this.t.inbox.filter((r) => r.turnId !== null && ids.has(r.turnId) && !r.consumedAt).sort((a, b) => a.id - b.id)) {
      const content = { role: 'user', content: r.text, timestamp: new Date(r.receivedAt).getTime() } as MessageRecord['content'];
      this.t.messages.push({ id: this.t.nextId(), conversationId, turnId: r.turnId, role: 'user', content, createdAt: now });
      r.consumedAt = now;
    }
    for (const [k, j] of this.t.journal) if (ids.has(j.turnId)) this.t.journal.delete(k);
    return { approvals: gone.map(copy), turns: parked.map((t) => t.id) };
  }

  async readyParkedTurns(): Promise<string[]> {
    return [...this.t.turns.values()]
      .filter((t) => t.status === 'parked' && !this.t.approvals.some((a) => a.turnId === t.id && a.status === 'pending'))
      .sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime())
      .map((t) => t.id);
  }

  async expireDue(): Promise<ApprovalRecord[]> {
    const now = this.t.now();
    const due = this.t.approvals.filter((a) => a.status === 'pending' && a.expiresAt <= now);
    for (const a of due) Object.assign(a, { status: 'expired', decidedAt: now });
    return due.map(copy);
  }

  async markExecuted(id: string): Promise<boolean> {
    const a = this.t.approvals.find((x) => x.id === id && x.status === 'approved');
    if (!a) return false;
    a.status = 'executed';
    return true;
  }

  async addRule(r: NewRule): Promise<AllowRuleRecord> {
    return copy(this.addRuleNow(r));
  }

  private addRuleNow(r: NewRule): AllowRuleRecord {
    const variable = [...new Set(r.variable ?? [])].sort((a, b) => a - b);
    const same = this.t.rules.find(
      (x) => x.tool === r.tool && x.pattern === r.pattern && x.scope === r.scope && x.scopeKey === r.scopeKey && x.variable.join() === variable.join(),
    );
    if (same) return same;
    const row: AllowRuleRecord = {
      id: this.t.nextId(),
      tool: r.tool,
      pattern: r.pattern,
      scope: r.scope,
      scopeKey: r.scopeKey,
      variable,
      kind: r.kind,
      createdBy: r.by,
      createdAt: this.t.now(),
    };
    this.t.rules.push(row);
    return row;
  }

  async rules(): Promise<AllowRuleRecord[]> {
    return [...this.t.rules].sort((a, b) => a.id - b.id).map(copy);
  }

  async rulesFor(conversationId: string, sender: string): Promise<AllowRule[]> {
    return (await this.rules())
      .filter((r) => r.scope === 'global' || (r.scope === 'conversation' && r.scopeKey === conversationId) || (r.scope === 'sender' && r.scopeKey === sender))
      .map((r) => ({ id: r.id, tool: r.tool, pattern: r.pattern, scope: r.scope, scopeKey: r.scopeKey, variable: r.variable, kind: r.kind }));
  }

  async rule(id: number): Promise<AllowRuleRecord | undefined> {
    const r = this.t.rules.find((x) => x.id === id);
    return r && copy(r);
  }

  async deleteRule(id: number): Promise<AllowRuleRecord | undefined> {
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

function byCreated(a: ApprovalRecord, b: ApprovalRecord): number {
  return a.createdAt.getTime() - b.createdAt.getTime();
}
