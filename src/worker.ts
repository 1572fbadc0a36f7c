import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Bus } from '../adapters/bus/port.js';
import { acquire, type LockService } from '../adapters/lock/port.js';
import type { JobQueue } from '../adapters/queue/port.js';
import type { InboxRow, Store } from '../adapters/store/store.js';
import { conversationTopic, EventPublisher } from './event-publisher.js';
import type { TimerJob } from './approvals/service.js';
import type { ChannelDeliverer, DeliverContext } from './channel.js';
import { CONTROL_TOPIC, type ControlEvent } from './commands.js';
import { queueModeFor, type QueueMode } from './queue-mode.js';
import type { EventHub, EventJob } from './webhooks/events.js';
import { runTurn, type TurnDeps } from './turn-runner.js';

export interface DrainJob {
  conversationId: string;
}

export interface WorkerDeps extends TurnDeps {
  /** Channel deliverers by channel name (the HTTP channel delivers through the bus alone). */
  deliverers: Map<string, ChannelDeliverer>;
  deliverContext: DeliverContext;
  /** Outbound event webhooks (turn.completed, provider.fallback...). */
  events?: EventHub;
  eventQueue?: JobQueue<EventJob>;
  queue: JobQueue<DrainJob>;
  timers: JobQueue<TimerJob>;
  bus: Bus;
  locks: LockService;
  log: Logger;
}

/** Turns one drain job may run before it hands the conversation back to the queue (fairness). */
const TURNS_PER_JOB = 20;

/**
 * The worker side: drains conversations. A drain job names a conversation; the
 * worker takes the conversation's lease, then runs turns for its unconsumed
 * inbox rows in order, one message per turn, resuming a turn whose previous
 * worker died. A periodic sweep re-drains conversations whose inbox rows have
 * waited too long, so a lost job never loses a message.
 */
export class Worker {
  readonly id = `${hostname()}:${process.pid}`;
  private sweepTimer?: NodeJS.Timeout;
  private readonly running = new Set<Promise<void>>();
  /** Turns running here, by conversation key, for /stop. */
  private readonly stoppers = new Map<string, AbortController>();
  private controlSub?: { close(): void };

  constructor(private readonly deps: WorkerDeps) {}

  start(): void {
    const { queue, config } = this.deps;
    queue.process(async (job) => this.drain(job.data.conversationId, job.signal), { concurrency: config.queue.concurrency });
    // Approval deadlines: fail-closed expiry resumes the parked turn.
    this.deps.timers.process(async () => void (await this.deps.approvals.expire()), { concurrency: 1 });
    const hub = this.deps.events;
    if (hub) this.deps.eventQueue?.process(async (job) => hub.deliver(job.data, job.attempt), { concurrency: 4 });
    void this.deps.bus
      .subscribe(CONTROL_TOPIC, (e) => {
        const c = e as ControlEvent;
        if (c.type === 'stop') this.stoppers.get(c.conversationKey)?.abort();
      })
      .then((sub) => (this.controlSub = sub));
    // At start, anything left unconsumed by a previous life is drained right away.
    void this.sweep(0);
    this.sweepTimer = setInterval(() => void this.sweep(config.queue.recoverAfterMs), config.queue.recoverIntervalMs);
    this.sweepTimer.unref();
  }

  async sweep(olderThanMs: number): Promise<number> {
    try {
      // Deadlines whose timer was lost (embedded restart) still expire.
      await this.deps.approvals.expire();
      const ids = await this.deps.store.stuckConversations(olderThanMs);
      for (const id of ids) await this.deps.queue.add({ conversationId: id }, { dedupKey: id });
      if (ids.length) this.deps.log.info({ count: ids.length }, 'recovery sweep re-drained conversations');
      return ids.length;
    } catch (err) {
      this.deps.log.warn({ err }, 'recovery sweep failed');
      return 0;
    }
  }

  async drain(conversationId: string, signal: AbortSignal): Promise<void> {
    const { store, locks, config, log } = this.deps;
    const ttl = config.queue.lockDurationMs;
    // The queue already keeps one drain per conversation; the lease also covers a
    // job wrongly judged stalled while its worker is alive but slow.
    const lease = await acquire(locks, `conv:${conversationId}`, ttl, ttl + 5_000, signal);
    if (!lease) throw new Error(`conversation ${conversationId} is busy elsewhere`);
    const renew = setInterval(() => void lease.renew().catch(() => {}), Math.max(250, Math.floor(ttl / 3)));
    const work = (async () => {
      try {
        const state = await store.drainState(conversationId);
        // A parked turn holds the conversation until its approvals are decided.
        if (!state || state.parked) return;
        const conv = state.conversation;
        const agent = config.agents[conv.agent] ?? config.agents.default!;
        const publisher = new EventPublisher(this.deps.bus, conversationTopic(conv.key));
        let pending = state.pending;
        for (let n = 0; n < TURNS_PER_JOB; n++) {
          if (pending.length === 0) return;
          const mode = queueModeFor(config, conv.channel, conv.queue_mode);
          if (mode === 'collect' && !pending.some((r) => r.turn_id)) {
            // Wait for a pause: answer the burst together.
            const newest = Math.max(...pending.map((r) => new Date(r.received_at).getTime()));
            const wait = config.conversations.collectQuietMs - (Date.now() - newest);
            if (wait > 0) {
              await new Promise((r) => setTimeout(r, wait));
              const again = await store.drainState(conversationId);
              if (!again || again.parked) return;
              pending = again.pending;
              if (Math.max(...pending.map((r) => new Date(r.received_at).getTime())) > newest) continue;
            }
          }
          const batch = pickBatch(pending, mode);
          // One round trip opens (or resumes) the turn and loads what it starts from.
          const begun = await store.beginTurn({
            conversationId,
            worker: this.id,
            inboxIds: batch.map((r) => r.id),
            ...(batch[0]!.turn_id ? { resumeTurnId: batch[0]!.turn_id } : {}),
            withHistory: !batch[0]!.context,
            historyLimit: agent.historyLimit,
            senderId: batch[0]!.sender.id,
            memoryLimit: 20,
          });
          if (!begun) throw new Error(`inbox rows of closed turn ${batch[0]!.turn_id} are unconsumed`);
          const turnLog = log.child({ conversation: conversationId, turn: begun.turn.id, attempt: begun.turn.attempt });
          turnLog.debug('turn start');
          let next: InboxRow[] | null;
          // /stop (or an interrupting message) from any process aborts this turn.
          const stop = new AbortController();
          this.stoppers.set(conv.key, stop);
          const control = { close: () => this.stoppers.get(conv.key) === stop && this.stoppers.delete(conv.key) };
          const turnSignal = AbortSignal.any([signal, stop.signal]);
          const delivery = this.deps.deliverers.get(conv.channel)?.open({ turnId: begun.turn.id, attempt: begun.turn.attempt, conversation: conv, batch }, this.deps.deliverContext);
          try {
            next = await runTurn(
              this.deps,
              conv,
              begun.turn,
              batch,
              begun,
              (e) => {
                publisher.push(e);
                delivery?.event(e);
                if (e.type === 'done' && this.deps.events) {
                  const data = { conversation: conv.id, conversationKey: conv.key, channel: conv.channel, turn: e.turnId, finishReason: e.finishReason, text: e.text, usage: e.usage, slot: e.provider?.slot ?? null };
                  if (e.finishReason !== 'approval_pending') this.deps.events.emit(e.finishReason === 'error' ? 'turn.failed' : 'turn.completed', data);
                  if (e.provider?.fallbackActivated) this.deps.events.emit('provider.fallback', { ...data, attempts: e.provider.attempts });
                }
              },
              turnSignal,
              async () => {
                await delivery?.close();
              },
            );
          } finally {
            control.close();
            await publisher.drain();
          }
          turnLog.debug('turn done');
          if (next === null) {
            // Parked (or closed elsewhere): look again, the conversation may be waiting.
            const again = await store.drainState(conversationId);
            if (!again || again.parked) return;
            pending = again.pending;
          } else pending = next;
        }
        // More waiting than one job should take in a row: let other conversations run.
        await this.deps.queue.add({ conversationId }, { dedupKey: conversationId });
      } finally {
        clearInterval(renew);
        await lease.release().catch(() => {});
      }
    })();
    this.running.add(work);
    try {
      await work;
    } finally {
      this.running.delete(work);
    }
  }

  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.controlSub?.close();
    await Promise.allSettled([...this.running]);
  }
}

/**
 * A resumed turn keeps the rows it claimed; otherwise the oldest message gets a
 * turn of its own (followup, steer), or everything waiting is answered at once
 * (collect, interrupt).
 */
export function pickBatch(pending: InboxRow[], mode: QueueMode = 'followup'): InboxRow[] {
  const claimed = pending.find((r) => r.turn_id)?.turn_id;
  if (claimed) return pending.filter((r) => r.turn_id === claimed);
  return mode === 'collect' || mode === 'interrupt' ? pending.filter((r) => !r.turn_id) : [pending[0]!];
}
