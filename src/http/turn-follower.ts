import type { Bus, Subscription, Topic } from '../../adapters/bus/port.js';
import type { InboxRepository, TranscriptRepository, TurnRepository } from '../../adapters/store/ports/index.js';
import type { BusTurnEvent, TurnEvent } from '../../kernel/turn-events.js';
import { ReplyBuffer } from '../channel/reply-buffer.js';
import { NOTICE } from '../handoffs/text.js';
import { PROVIDER_FAILED_TEXT } from '../turn/settle.js';
import { TurnEventOrdering } from './turn-order.js';

/** The store as the follower reads it: the inbox message, its turn, and the turn's reply. */
type FollowedStore = Pick<InboxRepository, 'inboxRow'> & Pick<TurnRepository, 'turn'> & Pick<TranscriptRepository, 'turnReply'>;

/** The inbox's turn id of a message recorded or moved into a handoff (adapters/store/handoffs.ts): `handoff:<id>`. */
const HANDOFF_TURN = 'handoff:';

/** What a follower says for a message that went to the operator: the takeover notice, no model, no tokens. */
function handoffDone(turnId: string, conversationId: string, inboxId: number): TurnEvent[] {
  return [
    { type: 'turn_start', turnId, conversationId, inboxIds: [inboxId], attempt: 1 },
    { type: 'done', turnId, text: NOTICE.taken, finishReason: 'stop', usage: { input: 0, output: 0, totalTokens: 0, cost: 0 } },
  ];
}

/**
 * Follows the turn that answers one inbox row. Subscribe before the message is
 * accepted (so no event can be missed), then bind() to the inbox id. Events of
 * that turn come out of next() in order, ending with 'done' or 'error'.
 * If the bus drops events (Redis restarted mid-turn), a slow poll of the store
 * still finds the finished turn and produces its 'done'.
 *
 * The bus events are numbered (TurnEventOrdering): a repeat is dropped, a newer attempt replaces
 * an older one, and a skipped number is read again from the topic's history. Joining a turn that
 * is running or finished (a retried request, any process, any time) reads that history first, so
 * everything said so far comes out before the live rest. The text that comes out always adds up to
 * the final answer: what the bus could not give (a hole the history no longer holds) is filled in
 * from the finished turn's whole text just before its 'done'.
 */
export class TurnWaiter {
  private sub?: Subscription;
  private inboxId?: number;
  private turnId?: string;
  private readonly queue: TurnEvent[] = [];
  private readonly early: TurnEvent[] = [];
  private notify?: () => void;
  private finished = false;
  private pollTimer?: NodeJS.Timeout;
  private readonly ordering = new TurnEventOrdering();
  /** What has come out of next() for the turn so far: the text the final answer must extend. */
  private said = new ReplyBuffer();
  private refilling?: Promise<void>;
  private refillAgain = false;

  private constructor(
    private readonly bus: Bus,
    private readonly topic: Topic<BusTurnEvent>,
    private readonly store: FollowedStore,
    private readonly pollMs: number,
  ) {}

  static async open(bus: Bus, store: FollowedStore, topic: Topic<BusTurnEvent>, pollMs = 2_000): Promise<TurnWaiter> {
    const w = new TurnWaiter(bus, topic, store, pollMs);
    w.sub = await bus.subscribe(topic, (e) => w.onEvent(e));
    return w;
  }

  /** Starts following the turn for this inbox row. For a duplicate row, it may already be done. */
  bind(inboxId: number, knownTurnId?: string): void {
    this.inboxId = inboxId;
    if (knownTurnId) this.turnId = knownTurnId;
    // Joining a turn that already began: what it said so far is in the topic's history.
    if (knownTurnId) this.refill();
    for (const e of this.early.splice(0)) this.onEvent(e);
    this.pollTimer = setInterval(() => void this.poll(), this.pollMs);
    this.pollTimer.unref();
  }

  private onEvent(e: BusTurnEvent): void {
    if (this.finished) return;
    if (this.inboxId === undefined) {
      this.early.push(e);
      return;
    }
    if (e.type === 'turn_start' && e.inboxIds.includes(this.inboxId) && this.turnId !== e.turnId) {
      this.turnId = e.turnId;
      // Its first event seen is not its first: the turn began before this follower (a join).
      if (e.seq !== undefined && e.seq > 1) this.refill();
    }
    if (!this.turnId || e.turnId !== this.turnId) return;
    for (const ready of this.ordering.accept(e)) this.push(ready);
    if (this.ordering.holes) this.refill();
  }

  /** Reads the topic's history again for what was skipped (or, joining, everything said before). */
  private refill(): void {
    if (this.refilling) {
      this.refillAgain = true;
      return;
    }
    this.refilling = (async () => {
      do {
        this.refillAgain = false;
        try {
          const events = await this.bus.history(this.topic);
          for (const e of events) if (!this.finished && e.turnId === this.turnId) for (const ready of this.ordering.accept(e)) this.push(ready);
        } catch (err) {
          // Redis is down: what the stream held is unreachable; the finished turn's text fills in.
          this.refillError = err;
        }
      } while (this.refillAgain && !this.finished);
      // What the history did not have, it will not get: go on without that text.
      for (const ready of this.ordering.giveUp()) this.push(ready);
    })().finally(() => {
      this.refilling = undefined;
    });
  }

  /** Why the last history read failed, if it did (kept for diagnostics: the follower has no logger, and the answer does not depend on it). */
  refillError?: unknown;

  private push(e: TurnEvent): void {
    if (this.finished) return;
    if (e.type === 'done') {
      // The answer as a whole: the part the client has not been given yet comes first.
      const have = this.said.text;
      if (e.text.length > have.length && e.text.startsWith(have)) this.emit({ type: 'text_delta', turnId: e.turnId, delta: e.text.slice(have.length) });
    }
    this.emit(e);
  }

  private emit(e: TurnEvent): void {
    this.said.push(e);
    this.queue.push(e);
    if (e.type === 'done' || e.type === 'error') this.finish();
    this.notify?.();
  }

  /** An event made up from the store: no numbering, but a newer attempt still replaces an older one. */
  private pushStored(e: TurnEvent): void {
    for (const ready of this.ordering.accept(e)) this.push(ready);
  }

  /** The store is the truth: a consumed inbox row means its turn is over. */
  async poll(immediate = false): Promise<void> {
    if (this.finished || this.inboxId === undefined) return;
    try {
      const row = await this.store.inboxRow(this.inboxId);
      if (!row?.consumedAt || !row.turnId || this.finished) return;
      // Moved to an operator while it waited (taken over, src/handoffs/): no turn answers it; the
      // request is answered with the notice a new message of a taken-over conversation gets.
      if (row.turnId.startsWith(HANDOFF_TURN)) {
        for (const e of handoffDone(row.turnId, row.conversationId, this.inboxId)) this.pushStored(e);
        return;
      }
      const turn = await this.store.turn(row.turnId);
      if (!turn || turn.status === 'running' || this.finished) return;
      // Give the bus a moment: its 'done' carries the same facts and usually wins.
      if (!immediate) await new Promise((r) => setTimeout(r, 200));
      if (this.finished) return;
      const text = await this.store.turnReply(turn.id);
      const usage = (turn.usage ?? { input: 0, output: 0, totalTokens: 0, cost: 0 }) as unknown as Extract<TurnEvent, { type: 'done' }>['usage'];
      this.turnId = turn.id;
      this.pushStored({ type: 'turn_start', turnId: turn.id, conversationId: turn.conversationId, inboxIds: [this.inboxId], attempt: turn.attempt });
      this.pushStored({
        type: 'done',
        turnId: turn.id,
        text: turn.finishReason === 'error' ? PROVIDER_FAILED_TEXT : text,
        finishReason: (turn.finishReason ?? 'stop') as Extract<TurnEvent, { type: 'done' }>['finishReason'],
        usage,
        ...(turn.provider ? { provider: turn.provider } : {}),
        replayed: true,
      } as TurnEvent);
    } catch {
      // The store is unreachable for now; the next poll tries again.
    }
  }

  /** The next event, or null after the turn ended or the timeout passed. */
  async next(timeoutMs: number): Promise<TurnEvent | null> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      if (this.finished) return null;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.notify = () => {
          clearTimeout(t);
          this.notify = undefined;
          resolve();
        };
      });
    }
    return this.queue.shift()!;
  }

  private finish(): void {
    this.finished = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.sub?.close();
  }

  close(): void {
    this.finish();
    this.queue.length = 0;
    this.notify?.();
  }
}
