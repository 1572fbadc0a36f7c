import { randomUUID } from 'node:crypto';
import type { InboxMessage } from '../../../adapters/store/ports/inbox.js';
import type { FinishTurn, StartedTurn, StartTurn, TurnRecord, TurnRepository } from '../../../adapters/store/ports/turns.js';
import { QUEUE_MODES } from '../../../kernel/queue-modes.js';
import { byId, type ConversationTableRow, conversationRecord, copy, inboxMessage, json, type Tables } from './tables.js';

/** Turns and the drain's lease, step for step as the one statement of the Postgres repository does them. */
export class MemoryTurns implements TurnRepository {
  constructor(private readonly t: Tables) {}

  async startTurn(b: StartTurn): Promise<StartedTurn> {
    const now = this.t.now();
    const c0 = this.t.conversations.get(b.conversationId);
    const mode = c0
      ? (QUEUE_MODES as readonly (string | null | undefined)[]).includes(c0.queueMode)
        ? c0.queueMode!
        : (b.modes.byChannel[c0.channel] ?? b.modes.default)
      : null;
    const pendRows = this.t.inbox.filter((r) => r.conversationId === b.conversationId && !r.consumedAt).sort(byId);
    const pend = pendRows.map(inboxMessage); // the snapshot, before the claim
    const parked = [...this.t.turns.values()].some((t) => t.conversationId === b.conversationId && t.status === 'parked');
    let c: ConversationTableRow | undefined;
    if (c0 && pend.length > 0 && !parked && (c0.leaseToken === null || c0.leaseToken === b.lease || (c0.leaseUntil !== null && c0.leaseUntil < now))) {
      c0.leaseToken = b.lease;
      c0.leaseUntil = new Date(now.getTime() + b.leaseMs);
      c = c0;
    }
    const claimed = pend.find((p) => p.turnId !== null)?.turnId ?? null;
    let resumed: TurnRecord | undefined;
    if (claimed && b.claim !== 'none' && c) {
      const r = this.t.turns.get(claimed);
      if (r && r.conversationId === b.conversationId && r.status === 'running') {
        r.attempt += 1;
        r.worker = b.worker;
        resumed = r;
      }
    }
    const policy = mode === null ? null : b.claim !== 'auto' ? b.claim : mode === 'collect' ? 'none' : mode === 'interrupt' ? 'all' : 'one';
    const turnId = 't_' + randomUUID();
    let claim: InboxMessage[] = [];
    if (policy !== null && policy !== 'none' && c && !claimed) {
      const free = pendRows.filter((r) => r.turnId === null);
      for (const r of policy === 'one' ? free.slice(0, 1) : free) r.turnId = turnId;
      claim = (policy === 'one' ? free.slice(0, 1) : free).map(inboxMessage);
    }
    let created: TurnRecord | undefined;
    if (claim.length > 0) {
      const seq = Math.max(0, ...[...this.t.turns.values()].filter((t) => t.conversationId === b.conversationId).map((t) => t.seq)) + 1;
      created = {
        id: turnId,
        conversationId: b.conversationId,
        seq,
        status: 'running',
        state: null,
        honesty: null,
        attempt: 1,
        worker: b.worker,
        startedAt: now,
        finishedAt: null,
        finishReason: null,
        error: null,
        usage: null,
        provider: null,
      };
      this.t.turns.set(turnId, created);
    }
    const started: StartedTurn = { conversation: c ? conversationRecord(c) : null, mode, hasWork: pend.length > 0 && !parked, pending: pend };
    const turn = resumed ?? created;
    if (!turn) return started;
    const batch = [...claim, ...pend.filter((p) => resumed && p.turnId === resumed.id)].sort(byId);
    const head = batch[0];
    // A missing window is no limit (limit null), as in SQL.
    const limit = b.historyLimits[c!.agent] ?? b.historyLimits.default;
    const window =
      head?.context == null ? newest(this.t.messages.filter((m) => m.conversationId === b.conversationId && m.id > c!.summaryUpto).sort(byId), limit) : [];
    const visible = this.t.memory.filter(
      (n) =>
        n.scope === 'global' ||
        (n.scope === 'conversation' && n.scopeKey === b.conversationId) ||
        (n.scope === 'sender' && n.scopeKey === head?.senderIdentity),
    );
    const memory = newest(visible.sort(byId), b.memoryLimit);
    return {
      ...started,
      turn: copy(turn),
      batch,
      context: { history: window.map((m) => copy(m.content)), historyIds: window.map((m) => m.id), summary: c!.summary, memory: memory.map((n) => n.body) },
    };
  }

  async finishTurn(f: FinishTurn): Promise<{ finished: boolean; pending: InboxMessage[] }> {
    const turn = this.t.turns.get(f.turnId);
    if (turn?.status !== 'running' || !this.holds(turn.conversationId, f.lease)) return { finished: false, pending: [] };
    const now = this.t.now();
    Object.assign(turn, {
      status: f.status,
      finishedAt: now,
      finishReason: f.finishReason,
      error: f.error ?? null,
      usage: f.usage ? json(f.usage) : null,
      provider: f.provider ? json(f.provider) : null,
      honesty: f.honesty?.length ? json(f.honesty) : null,
      state: null,
    });
    for (const m of f.messages)
      this.t.messages.push({ id: this.t.nextId(), conversationId: turn.conversationId, turnId: turn.id, role: m.role, content: json(m), createdAt: now });
    const rest = this.t.inbox.filter((p) => p.conversationId === turn.conversationId && !p.consumedAt && p.turnId !== turn.id).sort(byId);
    for (const r of this.t.inbox) if (r.turnId === turn.id && !r.consumedAt) r.consumedAt = now;
    for (const [k, j] of this.t.journal) if (j.turnId === turn.id) this.t.journal.delete(k);
    const c = this.t.conversations.get(turn.conversationId);
    if (c && f.lease !== undefined && c.leaseToken === f.lease && rest.length === 0) release(c);
    return { finished: true, pending: rest.map(inboxMessage) };
  }

  /** The fence of finishTurn and parkTurn: no lease given, or the conversation's lease is still it. */
  private holds(conversationId: string, lease: string | undefined): boolean {
    return lease === undefined || this.t.conversations.get(conversationId)?.leaseToken === lease;
  }

  async parkTurn(turnId: string, state: unknown, lease?: string): Promise<boolean> {
    const turn = this.t.turns.get(turnId);
    if (turn?.status !== 'running' || !this.holds(turn.conversationId, lease)) return false;
    turn.status = 'parked';
    turn.state = json(state);
    return true;
  }

  async unparkTurn(turnId: string): Promise<string | undefined> {
    const turn = this.t.turns.get(turnId);
    if (turn?.status !== 'parked') return undefined;
    turn.status = 'running';
    return turn.conversationId;
  }

  async deferTurn(turnId: string, conversationId: string, lease: string): Promise<void> {
    const turn = this.t.turns.get(turnId);
    const held = this.t.conversations.get(conversationId)?.leaseToken === lease;
    if (held && turn && turn.conversationId === conversationId && turn.status === 'running') {
      if (turn.attempt === 1) {
        this.t.turns.delete(turnId);
        for (const r of this.t.inbox) if (r.turnId === turnId && !r.consumedAt) r.turnId = null;
      } else if (turn.attempt > 1) turn.attempt -= 1;
    }
    const c = this.t.conversations.get(conversationId);
    if (c && c.leaseToken === lease) release(c);
  }

  async renewLease(conversationId: string, lease: string, leaseMs: number): Promise<boolean> {
    const c = this.t.conversations.get(conversationId);
    if (!c || c.leaseToken !== lease) return false;
    c.leaseUntil = new Date(this.t.now().getTime() + leaseMs);
    return true;
  }

  async releaseLease(conversationId: string, lease: string): Promise<void> {
    const c = this.t.conversations.get(conversationId);
    if (c && c.leaseToken === lease) release(c);
  }

  async turn(id: string): Promise<TurnRecord | undefined> {
    const turn = this.t.turns.get(id);
    return turn && copy(turn);
  }

  async turns(conversationId: string): Promise<TurnRecord[]> {
    return [...this.t.turns.values()]
      .filter((t) => t.conversationId === conversationId)
      .sort((a, b) => a.seq - b.seq)
      .map(copy);
  }
}

/** The last n (all when n is undefined), in their order: `order by id desc limit n`, read back oldest first. */
function newest<T>(xs: T[], n: number | undefined): T[] {
  return n === undefined ? xs : n > 0 ? xs.slice(-n) : [];
}

function release(c: ConversationTableRow): void {
  c.leaseToken = null;
  c.leaseUntil = null;
}
