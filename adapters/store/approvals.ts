import { randomUUID } from 'node:crypto';
import type { AllowRule } from '../../kernel/allow-rule.js';
import { newCode } from '../../kernel/approval-code.js';
import type { Db, Queryable } from '../db/port.js';
import type {
  AllowRuleRecord,
  AnswerOutcome,
  AnswerWrite,
  ApprovalRecord,
  ApprovalRepository,
  ApprovalStatus,
  CreatedApproval,
  DecideOutcome,
  NewApproval,
  NewRule,
} from './ports/approvals.js';

export { CODE_ALPHABET, CODE_LENGTH, newCode } from '../../kernel/approval-code.js';
export { argsHash } from '../../kernel/args-hash.js';
export type {
  AllowRuleRecord,
  AnswerOutcome,
  AnswerWrite,
  ApprovalRecord,
  ApprovalRepository,
  ApprovalStatus,
  CreatedApproval,
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
  traceparent: string | null;
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
    ...(r.traceparent ? { traceparent: r.traceparent } : {}),
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

  async create(a: NewApproval): Promise<CreatedApproval> {
    for (let attempt = 0; ; attempt++) {
      try {
        // A retried attempt parks on the row an earlier one made: its traceparent (the wait span's parent) becomes that attempt's.
        // xmax = 0: this statement inserted the row (a retried attempt's conflict updates it); only then is it audited.
        const r = await this.db.query<ApprovalColumns & { created: boolean }>(
          `with ins as (
             insert into approvals (id, code, conversation_id, turn_id, tool_call_id, tool, args, args_hash, pattern, tier, reasons, rule_permitted, requester, channel, expires_at, traceparent)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
             on conflict (turn_id, tool_call_id) do update set turn_id = excluded.turn_id, traceparent = coalesce(excluded.traceparent, approvals.traceparent)
             returning *, (xmax = 0) as created
           ), audited as (
             insert into audit (actor, action, subject, details)
             select coalesce(requester, 'unknown'), 'approval.requested', code,
                    jsonb_build_object('approval', id, 'tool', tool, 'tier', tier, 'turn', turn_id)
             from ins where created
           )
           select * from ins`,
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
            a.traceparent ?? null,
          ],
        );
        const row = r.rows[0]!;
        return { ...approvalFromRow(row), created: row.created };
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
    const a = await decideOn(this.db, code, decision, by, via, always);
    return a ? { ok: true, approval: a } : this.refusal(code);
  }

  /**
   * The decision, its rule and audit rows, and the unpark of the turn when this was its
   * last pending approval, in one transaction: an answer whose reply is lost either
   * happened whole (the turn is runnable; a lost drain job is the sweep's) or not at all.
   */
  async answer(w: AnswerWrite): Promise<AnswerOutcome> {
    const done = await this.db.transaction(async (tx): Promise<AnswerOutcome | undefined> => {
      const a = await decideOn(tx, w.code, w.decision, w.by, w.via, !!w.rule);
      if (!a) return undefined;
      const rule = a.always && w.rule ? await addRuleOn(tx, { ...w.rule, tool: a.tool, pattern: a.pattern, by: w.by }) : undefined;
      if (rule)
        await auditOn(tx, w.by, 'rule.created', a.code, {
          rule: rule.id,
          tool: rule.tool,
          pattern: rule.pattern,
          scope: rule.scope,
          scopeKey: rule.scopeKey,
          variable: rule.variable,
        });
      await auditOn(tx, w.by, `approval.${a.status}`, a.code, {
        approval: a.id,
        always: a.always,
        via: w.via,
        ...(rule ? { rule: rule.id, scope: rule.scope } : {}),
      });
      // The turn's row serializes this with the turn's other answers and with its park: whichever
      // comes last sees the others committed, so a turn whose approvals are all decided is unparked.
      await tx.query('select id from turns where id = $1 for update', [a.turnId]);
      const unparked = (
        await tx.query<{ conversation_id: string }>(
          `update turns set status = 'running'
           where id = $1 and status = 'parked' and not exists (select 1 from approvals where turn_id = $1 and status = 'pending')
           returning conversation_id`,
          [a.turnId],
        )
      ).rows[0]?.conversation_id;
      return { ok: true, approval: a, ...(rule ? { rule } : {}), ...(unparked ? { unparked } : {}) };
    });
    return done ?? this.refusal(w.code);
  }

  /** Why a code could not be decided: unknown, expired (or past its deadline), or already decided. */
  private async refusal(code: string): Promise<DecideOutcome & { ok: false }> {
    const existing = await this.byCode(code);
    if (!existing) return { ok: false, reason: 'unknown' };
    if (existing.status === 'pending' || existing.status === 'expired') return { ok: false, reason: 'expired', approval: existing };
    return { ok: false, reason: 'already_decided', approval: existing };
  }

  async supersede(turnId: string, keep: string[]): Promise<ApprovalRecord[]> {
    return (
      await this.db.query<ApprovalColumns>(
        `update approvals set status = 'expired', decided_by = 'superseded', decided_at = now()
         where turn_id = $1 and status = 'pending' and not (id = any($2::text[]))
         returning *`,
        [turnId, keep],
      )
    ).rows.map(approvalFromRow);
  }

  /**
   * Takeover: the conversation's parked turns are closed without running again, and their pending
   * approvals withdrawn (expired, decided_by 'takeover'). One transaction, approvals first (the
   * order an answer locks in), then the turn only while it is still parked: an answer that already
   * unparked it (a resume that began) keeps its turn, and its approvals are no longer pending.
   */
  async withdrawParked(conversationId: string): Promise<{ approvals: ApprovalRecord[]; turns: string[] }> {
    return this.db.transaction(async (tx) => {
      const withdrawn = (
        await tx.query<ApprovalColumns>(
          `update approvals set status = 'expired', decided_by = 'takeover', decided_at = now()
           where status = 'pending' and turn_id in (select id from turns where conversation_id = $1 and status = 'parked')
           returning *`,
          [conversationId],
        )
      ).rows.map(approvalFromRow);
      const turns = (
        await tx.query<{ id: string }>(
          `with t as (
             update turns set status = 'done', finished_at = now(), finish_reason = 'aborted', state = null
             where conversation_id = $1 and status = 'parked'
             returning id, conversation_id
           ), m as (
             -- The user's words stay in the transcript (the operator answers them); the agent's unfinished calls do not.
             insert into messages (conversation_id, turn_id, role, content)
             select i.conversation_id, i.turn_id, 'user',
                    jsonb_build_object('role', 'user', 'content', i.text, 'timestamp', (extract(epoch from i.received_at) * 1000)::bigint)
             from inbox i join t on i.turn_id = t.id where i.consumed_at is null
             order by i.id
           ), i as (
             update inbox set consumed_at = now() where turn_id in (select id from t) and consumed_at is null
           ), j as (
             delete from turn_journal where turn_id in (select id from t)
           )
           select id from t`,
          [conversationId],
        )
      ).rows.map((r) => r.id);
      return { approvals: withdrawn, turns };
    });
  }

  async readyParkedTurns(): Promise<string[]> {
    return (
      await this.db.query<{ id: string }>(
        `select t.id from turns t
         where t.status = 'parked' and not exists (select 1 from approvals a where a.turn_id = t.id and a.status = 'pending')
         order by t.started_at`,
      )
    ).rows.map((r) => r.id);
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
  addRule(r: NewRule): Promise<AllowRuleRecord> {
    return addRuleOn(this.db, r);
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

  audit(actor: string, action: string, subject: string | null, details: unknown): Promise<void> {
    return auditOn(this.db, actor, action, subject, details);
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

/** Decides a pending, unexpired approval; undefined when none with this code is. `always` sticks only to an approval. */
async function decideOn(
  q: Queryable,
  code: string,
  decision: 'approved' | 'denied',
  by: string,
  via: string,
  always: boolean,
): Promise<ApprovalRecord | undefined> {
  const r = await q.query<ApprovalColumns>(
    `update approvals set status = $2, decided_by = $3, decided_via = $4, decided_at = now(), always = $5
     where code = $1 and status = 'pending' and expires_at > now()
     returning *`,
    [code, decision, by, via, always && decision === 'approved'],
  );
  return r.rows[0] && approvalFromRow(r.rows[0]);
}

async function addRuleOn(q: Queryable, r: NewRule): Promise<AllowRuleRecord> {
  const variable = [...new Set(r.variable ?? [])].sort((a, b) => a - b);
  const params = [r.tool, r.pattern, r.scope, r.scopeKey, variable, r.kind, r.by];
  const ins = await q.query<RuleColumns>(
    `insert into allow_rules (tool, pattern, scope, scope_key, variable, kind, created_by) values ($1, $2, $3, $4, $5::int[], $6, $7)
     on conflict do nothing returning *`,
    params,
  );
  if (ins.rows[0]) return ruleFromRow(ins.rows[0]);
  const found = await q.query<RuleColumns>(
    'select * from allow_rules where tool = $1 and pattern = $2 and scope = $3 and scope_key = $4 and variable = $5::int[]',
    params.slice(0, 5),
  );
  return ruleFromRow(found.rows[0]!);
}

async function auditOn(q: Queryable, actor: string, action: string, subject: string | null, details: unknown): Promise<void> {
  await q.query('insert into audit (actor, action, subject, details) values ($1, $2, $3, $4)', [actor, action, subject, JSON.stringify(details ?? null)]);
}
