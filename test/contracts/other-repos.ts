/**
 * Contracts of the approval and channel-facing repositories
 * (adapters/store/ports/), asserted on every implementation by
 * test/ports.contract.test.ts. Each test works on rows of its own.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { NewApproval } from '../../adapters/store/ports/approvals.js';
import type { AllRepositories } from '../support/memory-repos/index.js';
import { msg, starter } from './conversation-repos.js';

const u = () => randomUUID().slice(0, 8);
/** Lets the clock move on: PGlite can stamp two quick statements with the same now(). */
const pause = () => new Promise((r) => setTimeout(r, 5));

export function otherRepositoryContracts(repos: () => AllRepositories): void {
  describe('approvals', () => {
    const request = async (extra: Partial<NewApproval> = {}): Promise<NewApproval> => {
      const a = await repos().inbox.accept(msg(`ap-${u()}`, `http/-/ap-${u()}/-`));
      return {
        conversationId: a.conversationId,
        turnId: `t_${u()}`,
        toolCallId: 'call_1',
        tool: 'shell_exec',
        args: { command: 'ls -la' },
        argsHash: 'h',
        pattern: 'ls -la',
        tier: 'caution',
        reasons: ['lists files'],
        rulePermitted: true,
        requester: 'http:u1',
        channel: 'http',
        expiresAt: new Date(Date.now() + 60_000),
        ...extra,
      };
    };

    it('creates one pending approval per tool call, with a code; a retried turn gets the same one', async () => {
      const r = await request();
      const a = await repos().approvals.create(r);
      expect(a).toMatchObject({
        conversationId: r.conversationId,
        turnId: r.turnId,
        toolCallId: 'call_1',
        tool: 'shell_exec',
        args: { command: 'ls -la' },
        reasons: ['lists files'],
        status: 'pending',
        always: false,
        decidedBy: null,
        requester: 'http:u1',
      });
      expect(a.code).toMatch(/^[ACDEFGHJKMNPQRTUVWXY34679]{5}$/);
      expect(a.expiresAt).toBeInstanceOf(Date);
      expect(a.createdAt).toBeInstanceOf(Date);
      expect(await repos().approvals.create(r)).toMatchObject({ id: a.id, code: a.code });
      const second = await repos().approvals.create({ ...r, toolCallId: 'call_2' });
      expect(second.id).not.toBe(a.id);
      expect((await repos().approvals.forTurn(r.turnId)).map((x) => x.id)).toEqual([a.id, second.id]);
      expect(await repos().approvals.get(a.id)).toMatchObject({ id: a.id, code: a.code });
      expect(await repos().approvals.byCode(a.code)).toMatchObject({ id: a.id });
      expect((await repos().approvals.pending()).map((x) => x.id)).toEqual(expect.arrayContaining([a.id, second.id]));
      expect((await repos().conversations.conversationStats((await repos().conversations.conversation(r.conversationId))!.key))!.pendingApprovals).toBe(2);
    });

    it("lists a conversation's pending requests only while its turn is parked, and only unexpired, undecided ones", async () => {
      const key = `http/-/parked-${u()}/-`;
      const a = await repos().inbox.accept(msg(`pk-${u()}`, key));
      const turn = (await starter(repos)(a.conversationId)).turn!;
      const base = { ...(await request()), conversationId: a.conversationId, turnId: turn.id };
      const first = await repos().approvals.create(base);
      const second = await repos().approvals.create({ ...base, toolCallId: 'call_2' });
      const late = await repos().approvals.create({ ...base, toolCallId: 'call_3', expiresAt: new Date(Date.now() - 1_000) });
      // Asked, but the turn still runs (it parks right after): nothing to wait for yet.
      expect(await repos().approvals.pendingForConversation(key)).toEqual([]);
      expect(await repos().turns.parkTurn(turn.id, { parked: true })).toBe(true);
      expect((await repos().approvals.pendingForConversation(key)).map((x) => x.code)).toEqual([first.code, second.code]);
      expect((await repos().approvals.pendingForConversation(key)).map((x) => x.id)).not.toContain(late.id);
      await repos().approvals.decide(first.code, 'approved', 'http:op', 'http');
      expect((await repos().approvals.pendingForConversation(key)).map((x) => x.id)).toEqual([second.id]);
      // Another conversation's request is not this one's.
      expect(await repos().approvals.pendingForConversation(`http/-/other-${u()}/-`)).toEqual([]);
      expect(await repos().turns.unparkTurn(turn.id)).toBe(a.conversationId);
      expect(await repos().approvals.pendingForConversation(key)).toEqual([]);
    });

    it('is decided once; an expired or unknown code is refused; an approved call executes once', async () => {
      const a = await repos().approvals.create(await request());
      const won = await repos().approvals.decide(a.code, 'approved', 'http:op', 'http', true);
      expect(won).toMatchObject({ ok: true, approval: { id: a.id, status: 'approved', decidedBy: 'http:op', decidedVia: 'http', always: true } });
      expect(won.ok && won.approval.decidedAt).toBeInstanceOf(Date);
      expect(await repos().approvals.decide(a.code, 'denied', 'http:op2', 'http')).toMatchObject({
        ok: false,
        reason: 'already_decided',
        approval: { status: 'approved' },
      });
      expect(await repos().approvals.pending()).not.toContainEqual(expect.objectContaining({ id: a.id }));
      expect(await repos().approvals.markExecuted(a.id)).toBe(true);
      expect(await repos().approvals.markExecuted(a.id)).toBe(false);
      const denied = await repos().approvals.create(await request());
      expect(await repos().approvals.decide(denied.code, 'denied', 'http:op', 'http', true)).toMatchObject({
        ok: true,
        approval: { status: 'denied', always: false },
      });
      expect(await repos().approvals.markExecuted(denied.id)).toBe(false);
      const late = await repos().approvals.create(await request({ expiresAt: new Date(Date.now() - 1_000) }));
      expect(await repos().approvals.decide(late.code, 'approved', 'http:op', 'http')).toMatchObject({
        ok: false,
        reason: 'expired',
        approval: { id: late.id, status: 'pending' },
      });
      const expired = await repos().approvals.expireDue();
      expect(expired.map((x) => x.id)).toContain(late.id);
      expect(expired.find((x) => x.id === late.id)).toMatchObject({ status: 'expired' });
      expect((await repos().approvals.expireDue()).map((x) => x.id)).not.toContain(late.id);
      expect(await repos().approvals.decide(late.code, 'approved', 'http:op', 'http')).toMatchObject({ ok: false, reason: 'expired' });
      expect(await repos().approvals.decide('QQQQQ', 'approved', 'http:op', 'http')).toEqual({ ok: false, reason: 'unknown' });
    });

    /** A parked turn of its own with two approvals. */
    const parkedWithTwo = async () => {
      const a = await repos().inbox.accept(msg(`ans-${u()}`, `http/-/ans-${u()}/-`));
      const turn = (await starter(repos)(a.conversationId)).turn!;
      const base = { ...(await request()), conversationId: a.conversationId, turnId: turn.id };
      const first = await repos().approvals.create(base);
      const second = await repos().approvals.create({ ...base, toolCallId: 'call_2', args: { command: `ls ${u()}` } });
      expect(await repos().turns.parkTurn(turn.id, { parked: true })).toBe(true);
      return { conversationId: a.conversationId, turnId: turn.id, first, second };
    };
    const statusOf = async (turnId: string) => (await repos().turns.turn(turnId))?.status;
    /** The audit rows of a code after its request (create() audits the request itself). */
    const decisions = async (code: string) => (await repos().approvals.auditTrail(code)).filter((e) => e.action !== 'approval.requested');

    it("answers in one call: the decision and its audit row; the turn's last answer unparks it", async () => {
      const { conversationId, turnId, first, second } = await parkedWithTwo();
      expect(await repos().approvals.readyParkedTurns()).not.toContain(turnId);
      const one = await repos().approvals.answer({ code: first.code, decision: 'approved', by: 'http:op', via: 'http' });
      expect(one).toMatchObject({ ok: true, approval: { id: first.id, status: 'approved', decidedBy: 'http:op', decidedVia: 'http', always: false } });
      expect(one.ok && one.unparked).toBeUndefined(); // the other one still waits
      expect(one.ok && one.rule).toBeUndefined();
      expect(await statusOf(turnId)).toBe('parked');
      const trail = await repos().approvals.auditTrail(first.code);
      expect(trail.map((e) => [e.actor, e.action])[0]).toEqual(['http:u1', 'approval.requested']);
      expect((await decisions(first.code)).map((e) => [e.actor, e.action, e.details])).toEqual([
        ['http:op', 'approval.approved', { approval: first.id, always: false, via: 'http' }],
      ]);
      const two = await repos().approvals.answer({ code: second.code, decision: 'denied', by: 'slack:T1:U9', via: 'slack' });
      expect(two).toMatchObject({ ok: true, approval: { status: 'denied' }, unparked: conversationId });
      expect(await statusOf(turnId)).toBe('running');
      expect(await repos().approvals.readyParkedTurns()).not.toContain(turnId);
      // A refusal writes nothing: no second decision, no audit row, no unpark.
      expect(await repos().approvals.answer({ code: first.code, decision: 'denied', by: 'http:op2', via: 'http' })).toMatchObject({
        ok: false,
        reason: 'already_decided',
        approval: { status: 'approved', decidedBy: 'http:op' },
      });
      expect(await decisions(first.code)).toHaveLength(1);
      expect(await repos().approvals.answer({ code: 'QQQQQ', decision: 'approved', by: 'http:op', via: 'http' })).toEqual({ ok: false, reason: 'unknown' });
      const late = await repos().approvals.create(await request({ expiresAt: new Date(Date.now() - 1_000) }));
      expect(await repos().approvals.answer({ code: late.code, decision: 'approved', by: 'http:op', via: 'http' })).toMatchObject({
        ok: false,
        reason: 'expired',
        approval: { status: 'pending' },
      });
      expect(await decisions(late.code)).toEqual([]);
    });

    it('an "always" answer makes its rule in the same call, audited; a denial makes none', async () => {
      const { first, second } = await parkedWithTwo();
      const r = await repos().approvals.answer({
        code: first.code,
        decision: 'approved',
        by: 'http:op',
        via: 'http',
        rule: { scope: 'conversation', scopeKey: first.conversationId, variable: [1], kind: 'command' },
      });
      expect(r).toMatchObject({
        ok: true,
        approval: { always: true },
        rule: { tool: 'shell_exec', pattern: 'ls -la', scope: 'conversation', scopeKey: first.conversationId, variable: [1], createdBy: 'http:op' },
      });
      const rule = r.ok ? r.rule! : undefined;
      expect((await repos().approvals.rules()).map((x) => x.id)).toContain(rule!.id);
      expect((await decisions(first.code)).map((e) => [e.action, e.details])).toEqual([
        ['rule.created', { rule: rule!.id, tool: 'shell_exec', pattern: 'ls -la', scope: 'conversation', scopeKey: first.conversationId, variable: [1] }],
        ['approval.approved', { approval: first.id, always: true, via: 'http', rule: rule!.id, scope: 'conversation' }],
      ]);
      const denied = await repos().approvals.answer({
        code: second.code,
        decision: 'denied',
        by: 'http:op',
        via: 'http',
        rule: { scope: 'global', scopeKey: '', variable: [], kind: 'command' },
      });
      expect(denied).toMatchObject({ ok: true, approval: { status: 'denied', always: false } });
      expect(denied.ok && denied.rule).toBeUndefined();
      await repos().approvals.deleteRule(rule!.id);
    });

    it("supersedes a turn's pending approvals that a park does not wait for", async () => {
      const { turnId, first, second } = await parkedWithTwo();
      const gone = await repos().approvals.supersede(turnId, [second.id]);
      expect(gone.map((a) => [a.id, a.status, a.decidedBy])).toEqual([[first.id, 'expired', 'superseded']]);
      expect(await repos().approvals.get(second.id)).toMatchObject({ status: 'pending' });
      expect(await repos().approvals.supersede(turnId, [second.id])).toEqual([]);
      await repos().approvals.decide(second.code, 'approved', 'http:op', 'http');
      expect(await repos().approvals.supersede(turnId, [])).toEqual([]); // decided ones stay as they are
      expect(await repos().approvals.get(second.id)).toMatchObject({ status: 'approved' });
    });

    it("withdraws a parked turn's pending approvals on takeover and closes the turn; a turn no longer parked is left alone", async () => {
      const { conversationId, turnId, first, second } = await parkedWithTwo();
      await repos().approvals.decide(first.code, 'denied', 'http:op', 'http');
      const r = await repos().approvals.withdrawParked(conversationId);
      expect(r.turns).toEqual([turnId]);
      expect(r.approvals.map((a) => [a.id, a.status, a.decidedBy])).toEqual([[second.id, 'expired', 'takeover']]);
      expect(await repos().approvals.get(first.id)).toMatchObject({ status: 'denied' }); // decided ones stay as they are
      expect(await repos().turns.turn(turnId)).toMatchObject({ status: 'done', finishReason: 'aborted', state: null });
      expect(await repos().approvals.readyParkedTurns()).not.toContain(turnId);
      expect(await repos().approvals.withdrawParked(conversationId)).toEqual({ approvals: [], turns: [] });
      const other = await parkedWithTwo();
      expect(await repos().turns.unparkTurn(other.turnId)).toBeTruthy();
      expect(await repos().approvals.withdrawParked(other.conversationId)).toEqual({ approvals: [], turns: [] });
      expect(await statusOf(other.turnId)).toBe('running');
      expect(await repos().approvals.get(other.first.id)).toMatchObject({ status: 'pending' });
    });

    it('finds parked turns none of whose approvals is pending (decided, expired), for the sweep', async () => {
      const { turnId, first, second } = await parkedWithTwo();
      // Decided without the unpark (as an answer that predates the one-call answer, or a lost write would leave it).
      await repos().approvals.decide(first.code, 'approved', 'http:op', 'http');
      expect(await repos().approvals.readyParkedTurns()).not.toContain(turnId);
      await repos().approvals.decide(second.code, 'denied', 'http:op', 'http');
      expect(await repos().approvals.readyParkedTurns()).toContain(turnId);
      expect(await repos().turns.unparkTurn(turnId)).toBeTruthy();
      expect(await repos().approvals.readyParkedTurns()).not.toContain(turnId);
      const other = await parkedWithTwo();
      await repos().approvals.decide(other.first.code, 'denied', 'http:op', 'http');
      expect(await repos().approvals.readyParkedTurns()).not.toContain(other.turnId);
    });

    it('keeps "always allow" rules once each, scoped, and an audit trail', async () => {
      const k = u();
      const rule = {
        tool: 'shell_exec',
        pattern: `ls ${k}`,
        scope: 'sender' as const,
        scopeKey: `http:${k}`,
        variable: [2, 1, 2],
        kind: 'command' as const,
        by: 'http:op',
      };
      const r = await repos().approvals.addRule(rule);
      expect(r).toMatchObject({
        tool: 'shell_exec',
        pattern: `ls ${k}`,
        scope: 'sender',
        scopeKey: `http:${k}`,
        variable: [1, 2],
        kind: 'command',
        createdBy: 'http:op',
      });
      expect(typeof r.id).toBe('number');
      expect((await repos().approvals.addRule({ ...rule, variable: [1, 2] })).id).toBe(r.id);
      const wider = await repos().approvals.addRule({ ...rule, variable: [1] });
      expect(wider.id).not.toBe(r.id);
      const conv = await repos().approvals.addRule({ ...rule, scope: 'conversation', scopeKey: `c_${k}` });
      const global = await repos().approvals.addRule({ ...rule, scope: 'global', scopeKey: '' });
      const forMe = (await repos().approvals.rulesFor(`c_${k}`, `http:${k}`)).filter((x) => x.pattern === `ls ${k}`);
      expect(forMe.map((x) => x.id)).toEqual([r.id, wider.id, conv.id, global.id]);
      expect(forMe[0]).toEqual({ id: r.id, tool: 'shell_exec', pattern: `ls ${k}`, scope: 'sender', scopeKey: `http:${k}`, variable: [1, 2], kind: 'command' });
      expect((await repos().approvals.rulesFor(`c_other`, `sms:${k}`)).filter((x) => x.pattern === `ls ${k}`).map((x) => x.id)).toEqual([global.id]);
      expect((await repos().approvals.rules()).map((x) => x.id)).toEqual(expect.arrayContaining([r.id, wider.id, conv.id, global.id]));
      expect(await repos().approvals.rule(r.id)).toMatchObject({ id: r.id, variable: [1, 2] });
      expect(await repos().approvals.deleteRule(r.id)).toMatchObject({ id: r.id });
      expect(await repos().approvals.deleteRule(r.id)).toBeUndefined();
      expect(await repos().approvals.rule(r.id)).toBeUndefined();
      for (const id of [wider.id, conv.id, global.id]) await repos().approvals.deleteRule(id);

      await repos().approvals.audit(`op-${k}`, 'approve', `ap_${k}`, { via: 'http' });
      await repos().approvals.audit(`op-${k}`, 'approve', `ap_${k}`, null);
      await repos().approvals.audit(`op-${k}`, 'deny', null, undefined);
      expect(await repos().approvals.auditCount(`op-${k}`, 'approve', 60_000)).toBe(2);
      expect(await repos().approvals.auditCount(`op-${k}`, 'deny', 60_000)).toBe(1);
      expect(await repos().approvals.auditCount(`op-${k}`, 'other', 60_000)).toBe(0);
      const trail = await repos().approvals.auditTrail(`ap_${k}`);
      expect(trail.map((e) => [e.actor, e.action, e.details])).toEqual([
        [`op-${k}`, 'approve', { via: 'http' }],
        [`op-${k}`, 'approve', null],
      ]);
      expect(trail[0]!.at).toBeInstanceOf(Date);
    });
  });

  describe('deliveries', () => {
    it('keeps one row per (turn, channel, target); a missing message id or body keeps the one recorded', async () => {
      const turn = `t_${u()}`;
      const d = await repos().deliveries.record(turn, 'slack', 'C1', { platformMessageId: '1.1', state: 'streaming', body: 'hel' });
      expect(d).toMatchObject({ turnId: turn, channel: 'slack', target: 'C1', platformMessageId: '1.1', state: 'streaming', body: 'hel' });
      expect(d.updatedAt).toBeInstanceOf(Date);
      const again = await repos().deliveries.record(turn, 'slack', 'C1', { state: 'done' });
      expect(again).toMatchObject({ id: d.id, platformMessageId: '1.1', state: 'done', body: 'hel' });
      await repos().deliveries.record(turn, 'slack', 'C1', { platformMessageId: '1.2', state: 'done', body: 'hello' });
      expect(await repos().deliveries.get(turn, 'slack', 'C1')).toMatchObject({ id: d.id, platformMessageId: '1.2', body: 'hello' });
      const other = await repos().deliveries.record(turn, 'slack', 'C2', { state: 'posting' });
      expect(other).toMatchObject({ platformMessageId: null, body: null });
      expect((await repos().deliveries.forTurn(turn)).map((x) => x.target)).toEqual(['C1', 'C2']);
      expect(await repos().deliveries.get(turn, 'sms', 'C1')).toBeUndefined();
      expect(await repos().deliveries.forTurn(`t_${u()}`)).toEqual([]);
    });

    it('fences a record on its attempt: once a newer attempt runs the turn, the older one writes nothing (lease_lost)', async () => {
      const key = `http/-/fence-d-${u()}/-`;
      const a = await repos().inbox.accept(msg(`fd-1-${u()}`, key, 'a'));
      const start = starter(repos);
      const t = (await start(a.conversationId)).turn!;
      await repos().deliveries.record(t.id, 'slack', 'msg:C1:0', { state: 'streaming', body: 'first', attempt: 1 });
      expect((await start(a.conversationId)).turn).toMatchObject({ id: t.id, attempt: 2 });
      await expect(repos().deliveries.record(t.id, 'slack', 'msg:C1:0', { state: 'delivered', body: 'stale', attempt: 1 })).rejects.toMatchObject({
        code: 'lease_lost',
      });
      await expect(repos().deliveries.record(t.id, 'slack', 'msg:C1:1', { state: 'streaming', attempt: 1 })).rejects.toMatchObject({ code: 'lease_lost' });
      expect(await repos().deliveries.get(t.id, 'slack', 'msg:C1:0')).toMatchObject({ state: 'streaming', body: 'first' });
      expect(await repos().deliveries.get(t.id, 'slack', 'msg:C1:1')).toBeUndefined();
      await repos().deliveries.record(t.id, 'slack', 'msg:C1:0', { state: 'delivered', body: 'second', attempt: 2 });
      expect(await repos().deliveries.get(t.id, 'slack', 'msg:C1:0')).toMatchObject({ state: 'delivered', body: 'second' });
    });

    it('keeps one dead letter per (turn, channel), the newest first; a second replaces the first', async () => {
      const [t1, t2] = [`t_${u()}`, `t_${u()}`];
      await repos().deliveries.deadLetter({
        turnId: t1,
        conversationId: 'c1',
        channel: 'slack',
        code: 'channel_delivery_failed:internal_error',
        error: 'HTTP 503',
        attempts: 5,
      });
      await pause(); // distinct timestamps: PGlite's clock can give two statements the same one
      await repos().deliveries.deadLetter({
        turnId: t2,
        conversationId: 'c2',
        channel: 'slack',
        code: 'channel_delivery_refused:channel_not_found',
        error: 'gone',
        attempts: 1,
      });
      await pause(); // distinct timestamps: PGlite's clock can give two statements the same one
      await repos().deliveries.deadLetter({
        turnId: t1,
        conversationId: 'c1',
        channel: 'slack',
        code: 'channel_delivery_refused:is_archived',
        error: 'archived',
        attempts: 2,
      });
      const mine = (await repos().deliveries.deadLetters(1000)).filter((d) => d.turnId === t1 || d.turnId === t2);
      expect(mine.map((d) => [d.turnId, d.code, d.attempts])).toEqual([
        [t1, 'channel_delivery_refused:is_archived', 2],
        [t2, 'channel_delivery_refused:channel_not_found', 1],
      ]);
      expect(mine[0]).toMatchObject({ conversationId: 'c1', channel: 'slack', error: 'archived' });
      expect(mine[0]!.createdAt).toBeInstanceOf(Date);
    });
  });

  describe('channel state', () => {
    it('keeps a JSON value per (channel, key) until deleted', async () => {
      const key = `k-${u()}`;
      expect(await repos().channelState.get('slack', key)).toBeUndefined();
      await repos().channelState.set('slack', key, { seen: ['a'], at: new Date(0) });
      expect(await repos().channelState.get('slack', key)).toEqual({ seen: ['a'], at: '1970-01-01T00:00:00.000Z' }); // a JSON round trip
      expect(await repos().channelState.get('email', key)).toBeUndefined();
      await repos().channelState.set('slack', key, 7);
      expect(await repos().channelState.get<number>('slack', key)).toBe(7);
      await repos().channelState.delete('slack', key);
      await repos().channelState.delete('slack', key);
      expect(await repos().channelState.get('slack', key)).toBeUndefined();
    });
  });

  describe('access', () => {
    it('pairs a sender by code once; keeps an unexpired code; an operator decides; the most specific form wins', async () => {
      const who = `U${u()}`;
      const code = `P${u()}`;
      const p = await repos().access.requestPairing('slack', `T1:${who}`, code, 60_000);
      expect(p).toMatchObject({ channel: 'slack', sender: `T1:${who}`, status: 'pending', code, decidedBy: null });
      expect(p.expiresAt).toBeInstanceOf(Date);
      expect(await repos().access.requestPairing('slack', `T1:${who}`, `X${u()}`, 60_000)).toMatchObject({ code, status: 'pending' }); // still the first code
      expect(await repos().access.pendingCount('slack')).toBeGreaterThanOrEqual(1);
      expect(await repos().access.approvePairing(`N${u()}`, 'http:op')).toBeUndefined();
      expect(await repos().access.approvePairing(code, 'http:op')).toMatchObject({ sender: `T1:${who}`, status: 'allowed', code: null, decidedBy: 'http:op' });
      expect(await repos().access.approvePairing(code, 'http:op')).toBeUndefined();
      expect(await repos().access.requestPairing('slack', `T1:${who}`, `Y${u()}`, 60_000)).toBeUndefined(); // an allowed sender stays allowed
      expect(await repos().access.get('slack', `T1:${who}`)).toMatchObject({ status: 'allowed' });
      await repos().access.setStatus('slack', who, 'denied', 'http:op');
      expect(await repos().access.get('slack', [`T1:${who}`, who])).toMatchObject({ sender: `T1:${who}`, status: 'allowed' });
      expect(await repos().access.get('slack', [`T2:${who}`, who])).toMatchObject({ sender: who, status: 'denied', decidedBy: 'http:op' });
      expect(await repos().access.get('sms', who)).toBeUndefined();
      // An expired code is replaced, and a denied sender who asks again is pending.
      const short = `S${u()}`;
      await repos().access.requestPairing('sms', who, short, 1);
      await new Promise((r) => setTimeout(r, 20));
      const renewed = `R${u()}`;
      expect(await repos().access.requestPairing('sms', who, renewed, 60_000)).toMatchObject({ code: renewed, status: 'pending' });
      expect(await repos().access.approvePairing(short, 'http:op')).toBeUndefined();
      expect(await repos().access.requestPairing('slack', who, `D${u()}`, 60_000)).toMatchObject({ status: 'pending' });
      await repos().access.setStatus('slack', who, 'allowed', 'http:op');
      expect(await repos().access.get('slack', who)).toMatchObject({ status: 'allowed', code: null });
      const allowed = await repos().access.list('allowed');
      expect(allowed.map((a) => a.sender)).toEqual(expect.arrayContaining([`T1:${who}`, who]));
      expect(allowed.every((a) => a.status === 'allowed')).toBe(true);
      expect((await repos().access.list())[0]).toMatchObject({ channel: 'slack', sender: who }); // most recently changed first
    });
  });

  describe('webhooks', () => {
    it('keeps subscribers by id and dead letters newest first', async () => {
      const id = `hook-${u()}`;
      await repos().webhooks.addSubscriber({ id, url: 'http://a.test/', secretEnv: 'A_SECRET', events: ['turn.done'] });
      await repos().webhooks.addSubscriber({ id, url: 'http://b.test/', secretEnv: 'B_SECRET', events: ['turn.done', 'approval.requested'] });
      expect((await repos().webhooks.subscribers()).filter((s) => s.id === id)).toEqual([
        { id, url: 'http://b.test/', secretEnv: 'B_SECRET', events: ['turn.done', 'approval.requested'] },
      ]);
      await repos().webhooks.deadLetter(id, { type: 'turn.done', n: 1 }, 'timeout', 3);
      await repos().webhooks.deadLetter(id, { type: 'turn.done', n: 2 }, 'HTTP 500', 5);
      const [newest, older] = await repos().webhooks.deadLetters(2);
      expect(newest).toMatchObject({ subscriber: id, event: { n: 2 }, error: 'HTTP 500', attempts: 5 });
      expect(older).toMatchObject({ event: { n: 1 }, attempts: 3 });
      expect(newest!.createdAt).toBeInstanceOf(Date);
      expect(await repos().webhooks.deadLetters(1)).toHaveLength(1);
    });
  });
}
