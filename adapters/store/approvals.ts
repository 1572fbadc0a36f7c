import { randomUUID } from 'node:crypto';
import type { AllowRule } from '../../kernel/allow-rule.js';
import { newCode } from '../../kernel/approval-code.js';
import type { Db } from '../db/port.js';
import type { AllowRuleRecord, ApprovalRecord, ApprovalRepository, ApprovalStatus, DecideOutcome, NewApproval, NewRule } from './ports/approvals.js';

export { CODE_ALPHABET, CODE_LENGTH, newCode } from '../../kernel/approval-code.js';
export { argsHash } from '../../kernel/args-hash.js';
export type {
  AllowRuleRecord,
  ApprovalRecord,
  ApprovalRepository,
  ApprovalStatus,
  DecideOutcome,
  NewApproval,
  NewRule,
  RuleScope,
} from './ports/approvals.js';

/** The columns of an approvals row, as pg returns them. */
interface ApprovalColumns {
  id: string;
  code: string;
  conversation_id: string;
  turn_id: string;
  tool_call_id: string;
  tool: string;
  args: unknown;
  args_hash: string;
  pattern: string;
  tier: string;
  reasons: string[];
  rule_permitted: boolean;
  requester: string | null;
  channel: string;
  status: ApprovalStatus;
  always: boolean;
  decided_by: string | null;
  decided_via: string | null;
  decided_at: Date | null;
  expires_at: Date;
  created_at: Date;
}

function approvalFromRow(r: ApprovalColumns): ApprovalRecord {
  return {
    id: r.id,
    code: r.code,
    conversationId: r.conversation_id,
    turnId: r.turn_id,
    toolCallId: r.tool_call_id,
    tool: r.tool,
    args: r.args,
    argsHash: r.args_hash,
    pattern: r.pattern,
    tier: r.tier,
    reasons: r.reasons,
    rulePermitted: r.rule_permitted,
    requester: r.requester,
    channel: r.channel,
    status: r.status,
    always: r.always,
    decidedBy: r.decided_by,
    decidedVia: r.decided_via,
    decidedAt: r.decided_at,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
  };
}

/** The columns of an allow_rules row, as pg returns them. */
interface RuleColumns {
  id: number | string;
  tool: string;
  pattern: string;
  scope: AllowRuleRecord['scope'];
  scope_key: string;
  variable: Array<number | string> | null;
  kind: AllowRuleRecord['kind'];
  created_by: string;
  created_at: Date;
}

function ruleFromRow(r: RuleColumns): AllowRuleRecord {
  return {
    id: Number(r.id),
    tool: r.tool,
    pattern: r.pattern,
    scope: r.scope,
    scopeKey: r.scope_key,
    variable: (r.variable ?? []).map(Number),
    kind: r.kind,
    createdBy: r.created_by,
    createdAt: r.created_at,
  };
}

/** Approvals, allow rules and the audit trail, in plain SQL (Postgres and PGlite). */
export class ApprovalStore implements ApprovalRepository {
  constructor(private readonly db: Db) {}

  async create(a: NewApproval): Promise<ApprovalRecord> {
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await this.db.query<ApprovalColumns>(
          `insert into approvals (id, code, conversation_id, turn_id, tool_call_id, tool, args, args_hash, pattern, tier, reasons, rule_permitted, requester, channel, expires_at)
           values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
           on conflict (turn_id, tool_call_id) do update set turn_id = excluded.turn_id
           returning *`,
          [
            'ap_' + randomUUID(),
            newCode(),
            a.conversationId,
            a.turnId,
            a.toolCallId,
            a.tool,
            JSON.stringify(a.args ?? null),
            a.argsHash,
            a.pattern,
            a.tier,
            JSON.stringify(a.reasons),
            a.rulePermitted,
            a.requester,
            a.channel,
            a.expiresAt,
          ],
        );
        return approvalFromRow(r.rows[0]!);
      } catch (err) {
        // A code already pending elsewhere: draw another.
        if ((err as { code?: string }).code === '23505' && attempt < 10) continue;
        throw err;
      }
    }
  }

  async pending(): Promise<ApprovalRecord[]> {
    return (await this.db.query<ApprovalColumns>(`select * from approvals where status = 'pending' order by created_at`)).rows.map(approvalFromRow);
  }

  async pendingForConversation(conversationKey: string): Promise<ApprovalRecord[]> {
    return (
      await this.db.query<ApprovalColumns>(
        `select a.* from approvals a
           join conversations c on c.id = a.conversation_id
           join turns t on t.id = a.turn_id
         where c.key = $1 and t.status = 'parked' and a.status = 'pending' and a.expires_at > now()
         order by a.created_at`,
        [conversationKey],
      )
    ).rows.map(approvalFromRow);
  }

  /** The newest approval with this code (codes are unique among pending ones only). */
  async byCode(code: string): Promise<ApprovalRecord | undefined> {
    const row = (
      await this.db.query<ApprovalColumns>(`select * from approvals where code = $1 order by (status = 'pending') desc, created_at desc limit 1`, [code])
    ).rows[0];
    return row && approvalFromRow(row);
  }

  async get(id: string): Promise<ApprovalRecord | undefined> {
    const row = (await this.db.query<ApprovalColumns>('select * from approvals where id = $1', [id])).rows[0];
    return row && approvalFromRow(row);
  }

  async forTurn(turnId: string): Promise<ApprovalRecord[]> {
    return (await this.db.query<ApprovalColumns>('select * from approvals where turn_id = $1 order by created_at', [turnId])).rows.map(approvalFromRow);
  }

  /**
   * Single-use and atomic: only a pending, unexpired approval changes, so of two
   * operators answering at once exactly one wins.
   */
  async decide(code: string, decision: 'approved' | 'denied', by: string, via: string, always = false): Promise<DecideOutcome> {
    const r = await this.db.query<ApprovalColumns>(
      `update approvals set status = $2, decided_by = $3, decided_via = $4, decided_at = now(), always = $5
       where code = $1 and status = 'pending' and expires_at > now()
       returning *`,
      [code, decision, by, via, always && decision === 'approved'],
    );
    if (r.rows[0]) return { ok: true, approval: approvalFromRow(r.rows[0]) };
    const existing = await this.byCode(code);
    if (!existing) return { ok: false, reason: 'unknown' };
    if (existing.status === 'pending' || existing.status === 'expired') return { ok: false, reason: 'expired', approval: existing };
    return { ok: false, reason: 'already_decided', approval: existing };
  }

  /** Fail-closed expiry: every pending approval past its deadline becomes expired. */
  async expireDue(): Promise<ApprovalRecord[]> {
    return (
      await this.db.query<ApprovalColumns>(
        `update approvals set status = 'expired', decided_at = now() where status = 'pending' and expires_at <= now() returning *`,
      )
    ).rows.map(approvalFromRow);
  }

  /** Claims an approved call for execution, once: a retried turn finds it already executed. */
  async markExecuted(id: string): Promise<boolean> {
    return (await this.db.query(`update approvals set status = 'executed' where id = $1 and status = 'approved'`, [id])).rowCount === 1;
  }

  /** Adds an "always allow" rule (or finds the same one already there). */
  async addRule(r: NewRule): Promise<AllowRuleRecord> {
    const variable = [...new Set(r.variable ?? [])].sort((a, b) => a - b);
    const params = [r.tool, r.pattern, r.scope, r.scopeKey, variable, r.kind, r.by];
    const ins = await this.db.query<RuleColumns>(
      `insert into allow_rules (tool, pattern, scope, scope_key, variable, kind, created_by) values ($1, $2, $3, $4, $5::int[], $6, $7)
       on conflict do nothing returning *`,
      params,
    );
    if (ins.rows[0]) return ruleFromRow(ins.rows[0]);
    const found = await this.db.query<RuleColumns>(
      'select * from allow_rules where tool = $1 and pattern = $2 and scope = $3 and scope_key = $4 and variable = $5::int[]',
      params.slice(0, 5),
    );
    return ruleFromRow(found.rows[0]!);
  }

  /** Every rule, oldest first. */
  async rules(): Promise<AllowRuleRecord[]> {
    return (await this.db.query<RuleColumns>('select * from allow_rules order by id')).rows.map(ruleFromRow);
  }

  /** The rules that may apply in this conversation, for this sender, as the engine reads them (it checks the scope again). */
  async rulesFor(conversationId: string, sender: string): Promise<AllowRule[]> {
    return (
      await this.db.query<RuleColumns>(
        `select * from allow_rules where scope = 'global' or (scope = 'conversation' and scope_key = $1) or (scope = 'sender' and scope_key = $2) order by id`,
        [conversationId, sender],
      )
    ).rows.map((row) => {
      const r = ruleFromRow(row);
      return { id: r.id, tool: r.tool, pattern: r.pattern, scope: r.scope, scopeKey: r.scopeKey, variable: r.variable, kind: r.kind };
    });
  }

  async rule(id: number): Promise<AllowRuleRecord | undefined> {
    const r = (await this.db.query<RuleColumns>('select * from allow_rules where id = $1', [id])).rows[0];
    return r && ruleFromRow(r);
  }

  async deleteRule(id: number): Promise<AllowRuleRecord | undefined> {
    const r = (await this.db.query<RuleColumns>('delete from allow_rules where id = $1 returning *', [id])).rows[0];
    return r && ruleFromRow(r);
  }

  async audit(actor: string, action: string, subject: string | null, details: unknown): Promise<void> {
    await this.db.query('insert into audit (actor, action, subject, details) values ($1, $2, $3, $4)', [
      actor,
      action,
      subject,
      JSON.stringify(details ?? null),
    ]);
  }

  /** How many audit rows of this action this actor has within the last windowMs. */
  async auditCount(actor: string, action: string, windowMs: number): Promise<number> {
    return (
      await this.db.query<{ n: number }>(
        `select count(*)::int as n from audit where actor = $1 and action = $2 and at > now() - $3 * interval '1 millisecond'`,
        [actor, action, windowMs],
      )
    ).rows[0]!.n;
  }

  async auditTrail(subject: string): Promise<Array<{ at: Date; actor: string; action: string; details: unknown }>> {
    return (
      await this.db.query<{ at: Date; actor: string; action: string; details: unknown }>(
        'select at, actor, action, details from audit where subject = $1 order by id',
        [subject],
      )
    ).rows;
  }
}
