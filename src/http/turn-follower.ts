import type { Bus, Subscription, Topic } from '../../adapters/bus/port.js';
import type { InboxRepository, TranscriptRepository, TurnRepository } from '../../adapters/store/ports/index.js';

/** The store as the follower reads it: the inbox message, its turn, and the turn's reply. */
type FollowedStore = Pick<InboxRepository, 'inboxRow'> & Pick<TurnRepository, 'turn'> & Pick<TranscriptRepository, 'turnReply'>;

import type { TurnEvent } from '../../kernel/turn-events.js';
import { PROVIDER_FAILED_TEXT } from '../turn/settle.js';

/**
 * Follows the turn that answers one inbox row. Subscribe before the message is
 * accepted (so no event can be missed), then bind() to the inbox id. Events of
 * that turn come out of next() in order, ending with 'done' or 'error'.
 * If the bus drops events (Redis restarted mid-turn), a slow poll of the store
 * still finds the finished turn and produces its 'done'.
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

  private constructor(
    private readonly store: FollowedStore,
    private readonly pollMs: number,
  ) {}

  static async open(bus: Bus, store: FollowedStore, topic: Topic<TurnEvent>, pollMs = 2_000): Promise<TurnWaiter> {
    const w = new TurnWaiter(store, pollMs);
    w.sub = await bus.subscribe(topic, (e) => w.onEvent(e));
    return w;
  }

  /** Starts following the turn for this inbox row. For a duplicate row, it may already be done. */
  bind(inboxId: number, knownTurnId?: string): void {
    this.inboxId = inboxId;
    if (knownTurnId) this.turnId = knownTurnId;
    for (const e of this.early.splice(0)) this.onEvent(e);
    this.pollTimer = setInterval(() => void this.poll(), this.pollMs);
    this.pollTimer.unref();
  }

  private onEvent(e: TurnEvent): void {
    if (this.finished) return;
    if (this.inboxId === undefined) {
      this.early.push(e);
      return;
    }
    if (e.type === 'turn_start' && e.inboxIds.includes(this.inboxId)) this.turnId = e.turnId;
    if (!this.turnId || e.turnId !== this.turnId) return;
    this.push(e);
  }

  private push(e: TurnEvent): void {
    if (this.finished) return;
    this.queue.push(e);
    if (e.type === 'done' || e.type === 'error') this.finish();
    this.notify?.();
  }

  /** The store is the truth: a consumed inbox row means its turn is over. */
  async poll(immediate = false): Promise<void> {
    if (this.finished || this.inboxId === undefined) return;
    try {
      const row = await this.store.inboxRow(this.inboxId);
      if (!row?.consumedAt || !row.turnId || this.finished) return;
      const turn = await this.store.turn(row.turnId);
      if (!turn || turn.status === 'running' || this.finished) return;
      // Give the bus a moment: its 'done' carries the same facts and usually wins.
      if (!immediate) await new Promise((r) => setTimeout(r, 200));
      if (this.finished) return;
      const text = await this.store.turnReply(turn.id);
      const usage = (turn.usage ?? { input: 0, output: 0, totalTokens: 0, cost: 0 }) as unknown as Extract<TurnEvent, { type: 'done' }>['usage'];
      this.turnId = turn.id;
      this.push({ type: 'turn_start', turnId: turn.id, conversationId: turn.conversationId, inboxIds: [this.inboxId], attempt: turn.attempt });
      this.push({
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
