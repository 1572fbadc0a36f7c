import { randomUUID } from 'node:crypto';
import type { ConversationRow } from '../../../adapters/store/ports/conversations.js';
import type { InboxRow } from '../../../adapters/store/ports/inbox.js';
import type { FinishTurn, StartedTurn, StartTurn, TurnRepository, TurnRow } from '../../../adapters/store/ports/turns.js';
import { QUEUE_MODES } from '../../../kernel/queue-modes.js';
import { inboxRow } from './inbox.js';
import { byId, type ConversationRecord, copy, json, type Tables } from './tables.js';

/** Turns and the drain's lease, step for step as the one statement of the Postgres repository does them. */
export class MemoryTurns implements TurnRepository {
  constructor(private readonly t: Tables) {}

  async startTurn(b: StartTurn): Promise<StartedTurn> {
    const now = this.t.now();
    const c0 = this.t.conversations.get(b.conversationId);
    const mode = c0
      ? (QUEUE_MODES as readonly (string | null | undefined)[]).includes(c0.queue_mode)
        ? c0.queue_mode!
        : (b.modes.byChannel[c0.channel] ?? b.modes.default)
      : null;
    const pendRows = this.t.inbox.filter((r) => r.conversation_id === b.conversationId && !r.consumed_at).sort(byId);
    const pend = pendRows.map(inboxRow); // the snapshot, before the claim
    const parked = [...this.t.turns.values()].some((t) => t.conversation_id === b.conversationId && t.status === 'parked');
    let c: ConversationRecord | undefined;
    if (c0 && pend.length > 0 && !parked && (c0.lease_token === null || c0.lease_token === b.lease || (c0.lease_until !== null && c0.lease_until < now))) {
      c0.lease_token = b.lease;
      c0.lease_until = new Date(now.getTime() + b.leaseMs);
      c = c0;
    }
    const claimed = pend.find((p) => p.turn_id !== null)?.turn_id ?? null;
    let resumed: TurnRow | undefined;
    if (claimed && b.claim !== 'none' && c) {
      const r = this.t.turns.get(claimed);
      if (r && r.conversation_id === b.conversationId && r.status === 'running') {
        r.attempt += 1;
        r.worker = b.worker;
        resumed = r;
      }
    }
    const policy = mode === null ? null : b.claim !== 'auto' ? b.claim : mode === 'collect' ? 'none' : mode === 'interrupt' ? 'all' : 'one';
    const turnId = 't_' + randomUUID();
    let claim: InboxRow[] = [];
    if (policy !== null && policy !== 'none' && c && !claimed) {
      const free = pendRows.filter((r) => r.turn_id === null);
      for (const r of policy === 'one' ? free.slice(0, 1) : free) r.turn_id = turnId;
      claim = (policy === 'one' ? free.slice(0, 1) : free).map(inboxRow);
    }
    let created: TurnRow | undefined;
    if (claim.length > 0) {
      const seq = Math.max(0, ...[...this.t.turns.values()].filter((t) => t.conversation_id === b.conversationId).map((t) => t.seq)) + 1;
      created = {
        id: turnId,
        conversation_id: b.conversationId,
        seq,
        status: 'running',
        state: null,
        honesty: null,
        attempt: 1,
        worker: b.worker,
        started_at: now,
        finished_at: null,
        finish_reason: null,
        error: null,
        usage: null,
        provider: null,
      };
      this.t.turns.set(turnId, created);
    }
    const started: StartedTurn = { conversation: c ? conversationRow(c) : null, mode, hasWork: pend.length > 0 && !parked, pending: pend };
    const turn = resumed ?? created;
    if (!turn) return started;
    const batch = [...claim, ...pend.filter((p) => resumed && p.turn_id === resumed.id)].sort(byId);
    const head = batch[0];
    // A missing window is no limit (limit null), as in SQL.
    const limit = b.historyLimits[c!.agent] ?? b.historyLimits.default;
    const window =
      head?.context == null ? newest(this.t.messages.filter((m) => m.conversation_id === b.conversationId && m.id > c!.summary_upto).sort(byId), limit) : [];
    const visible = this.t.memory.filter(
      (n) =>
        n.scope === 'global' ||
        (n.scope === 'conversation' && n.scope_key === b.conversationId) ||
        (n.scope === 'sender' && n.scope_key === head?.sender_identity),
    );
    const memory = newest(visible.sort(byId), b.memoryLimit);
    return {
      ...started,
      turn: copy(turn),
      batch,
      context: { history: window.map((m) => copy(m.content)), historyIds: window.map((m) => m.id), summary: c!.summary, memory: memory.map((n) => n.body) },
    };
  }

  async finishTurn(f: FinishTurn): Promise<{ finished: boolean; pending: InboxRow[] }> {
    const turn = this.t.turns.get(f.turnId);
    if (turn?.status !== 'running') return { finished: false, pending: [] };
    const now = this.t.now();
    Object.assign(turn, {
      status: f.status,
      finished_at: now,
      finish_reason: f.finishReason,
      error: f.error ?? null,
      usage: f.usage ? json(f.usage) : null,
      provider: f.provider ? json(f.provider) : null,
      honesty: f.honesty?.length ? json(f.honesty) : null,
      state: null,
    });
    for (const m of f.messages)
      this.t.messages.push({ id: this.t.nextId(), conversation_id: turn.conversation_id, turn_id: turn.id, role: m.role, content: json(m), created_at: now });
    const rest = this.t.inbox.filter((p) => p.conversation_id === turn.conversation_id && !p.consumed_at && p.turn_id !== turn.id).sort(byId);
    for (const r of this.t.inbox) if (r.turn_id === turn.id && !r.consumed_at) r.consumed_at = now;
    for (const [k, j] of this.t.journal) if (j.turn_id === turn.id) this.t.journal.delete(k);
    const c = this.t.conversations.get(turn.conversation_id);
    if (c && f.lease !== undefined && c.lease_token === f.lease && rest.length === 0) release(c);
    return { finished: true, pending: rest.map(inboxRow) };
  }

  async parkTurn(turnId: string, state: unknown): Promise<boolean> {
    const turn = this.t.turns.get(turnId);
    if (turn?.status !== 'running') return false;
    turn.status = 'parked';
    turn.state = json(state);
    return true;
  }

  async unparkTurn(turnId: string): Promise<string | undefined> {
    const turn = this.t.turns.get(turnId);
    if (turn?.status !== 'parked') return undefined;
    turn.status = 'running';
    return turn.conversation_id;
  }

  async deferTurn(turnId: string, conversationId: string, lease: string): Promise<void> {
    const turn = this.t.turns.get(turnId);
    if (turn && turn.conversation_id === conversationId && turn.status === 'running') {
      if (turn.attempt === 1) {
        this.t.turns.delete(turnId);
        for (const r of this.t.inbox) if (r.turn_id === turnId && !r.consumed_at) r.turn_id = null;
      } else if (turn.attempt > 1) turn.attempt -= 1;
    }
    const c = this.t.conversations.get(conversationId);
    if (c && c.lease_token === lease) release(c);
  }

  async renewLease(conversationId: string, lease: string, leaseMs: number): Promise<boolean> {
    const c = this.t.conversations.get(conversationId);
    if (!c || c.lease_token !== lease) return false;
    c.lease_until = new Date(this.t.now().getTime() + leaseMs);
    return true;
  }

  async releaseLease(conversationId: string, lease: string): Promise<void> {
    const c = this.t.conversations.get(conversationId);
    if (c && c.lease_token === lease) release(c);
  }

  async turn(id: string): Promise<TurnRow | undefined> {
    const turn = this.t.turns.get(id);
    return turn && copy(turn);
  }

  async turns(conversationId: string): Promise<TurnRow[]> {
    return [...this.t.turns.values()]
      .filter((t) => t.conversation_id === conversationId)
      .sort((a, b) => a.seq - b.seq)
      .map(copy);
  }
}

/** The last n (all when n is undefined), in their order: `order by id desc limit n`, read back oldest first. */
function newest<T>(xs: T[], n: number | undefined): T[] {
  return n === undefined ? xs : n > 0 ? xs.slice(-n) : [];
}

function release(c: ConversationRecord): void {
  c.lease_token = null;
  c.lease_until = null;
}

/** As the Postgres repository returns it from startTurn: every column but the lease. */
function conversationRow(c: ConversationRecord): ConversationRow {
  const { lease_token: _t, lease_until: _u, ...rest } = copy(c);
  return rest;
}
