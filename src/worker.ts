import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Bus } from '../adapters/bus/port.js';
import type { LockService } from '../adapters/lock/port.js';
import type { JobQueue } from '../adapters/queue/port.js';
import type { TurnSlots } from '../adapters/ratelimit/port.js';
import { type GatewayStore, type InboxMessage, type StartTurn, senderIdentity } from '../adapters/store/ports/index.js';
import { parseIdentity } from '../kernel/identity.js';
import type { DeliveryJob, DrainJob, EventJob, SlotScope, TimerJob } from '../kernel/jobs.js';
import { linkedSignal } from '../kernel/linked-signal.js';
import type { ApprovalService } from './approvals/service.js';
import { type DeliverContext, storedTurnTarget, type TurnDeliverer } from './channel/deliver.js';
import { CONTROL_TOPIC, type ControlEvent } from './commands.js';
import { DeliveryRetries } from './delivery-retries.js';
import { ConversationBusyError, StaleInboxError } from './drain-errors.js';
import { conversationTopic, EventPublisher } from './event-publisher.js';
import { fencedDeliveries } from './fenced-deliveries.js';
import { turnScopes } from './limits.js';
import type { Metrics } from './metrics.js';
import { TurnTrace } from './telemetry/genai.js';
import { failSpan, jobTrace, within } from './telemetry/tracer.js';
import { drainSpans, startTurnSpan } from './telemetry/worker-spans.js';
import { runTurn, type TurnDeps } from './turn/index.js';
import { LeaseGuard } from './turn/lease-guard.js';
import { busSink } from './turn/sinks/bus-sink.js';
import { deliverySink, type FailedDelivery } from './turn/sinks/delivery-sink.js';
import { fanOut } from './turn/sinks/fan-out.js';
import { leaseGate } from './turn/sinks/lease-gate.js';
import { logSink } from './turn/sinks/log-sink.js';
import { metricsSink } from './turn/sinks/metrics-sink.js';
import { nothingToSayGate, scheduledBatch } from './turn/sinks/nothing-to-say.js';
import { traceSink } from './turn/sinks/trace-sink.js';
import { eventWebhookSink } from './turn/sinks/webhook-sink.js';
import { type OpenedDrain, TURN_MEMORY_LIMIT, type TurnOpener, turnOpener } from './turn-opening.js';
import type { EventHub } from './webhooks/events.js';

export type { DrainJob } from '../kernel/jobs.js';

export interface WorkerDeps extends Omit<TurnDeps, 'store' | 'approvals'> {
  /** The whole store and approval service: the drain uses more of them than the turn's ports. */
  store: GatewayStore;
  approvals: ApprovalService;
  /** Channel deliverers by channel name (the HTTP channel delivers through the bus alone). */
  deliverers: Map<string, TurnDeliverer>;
  deliverContext: DeliverContext;
  /** Outbound event webhooks (turn.completed, provider.fallback...). */
  events?: EventHub;
  eventQueue?: JobQueue<EventJob>;
  queue: JobQueue<DrainJob>;
  timers: JobQueue<TimerJob>;
  /** Replies whose channel failed after their turn closed: replayed, retried, then dead-lettered. Without it such a failure retries the turn. */
  deliveryQueue?: JobQueue<DeliveryJob>;
  bus: Bus;
  locks: LockService;
  log: Logger;
  /** The metrics sink counts turns, first tokens, fallbacks, approvals and provider attempts here. */
  metrics?: Metrics;
  /** Counts running turns per API key and sender (limits.maxConcurrentTurnsPer*); by default the worker opens its own with openSlots. */
  slots?: TurnSlots;
  /** Opens the worker's own turn slots (in Redis when there is one), when a cap is on and no slots are given; the worker closes them. */
  openSlots: () => TurnSlots;
}

/** Turns one drain job may run before it hands the conversation back to the queue (fairness). */
const TURNS_PER_JOB = 20;

/**
 * A drain refused by a concurrency cap is woken when one of its key's turns
 * ends; this retry comes anyway, in case that wake is lost (a worker died, the
 * woken drain found nothing to do, a crashed holder's slot expired).
 */
const DEFER_RETRY_MS = 3_000;

/** Longest wait for the slot counter; past it the turn runs uncounted rather than wait (fail open). */
const SLOT_TIMEOUT_MS = 2_000;

/**
 * The worker side: drains conversations. A drain job names a conversation; the
 * worker takes the conversation's lease with its first turn, then runs turns for its unconsumed
 * inbox rows in order, one message per turn, resuming a turn whose previous
 * worker died. A periodic sweep re-drains conversations whose inbox rows have
 * waited too long, so a lost job never loses a message, and resumes parked
 * turns whose approvals are all decided, so a lost unpark never wedges one.
 */
export class Worker {
  readonly id = `${hostname()}:${process.pid}`;
  private sweepTimer?: NodeJS.Timeout;
  private readonly running = new Set<Promise<void>>();
  /** Turns running here, by conversation key, for /stop. */
  private readonly stoppers = new Map<string, AbortController>();
  private controlSub?: { close(): void };

  /** Transcript window per agent, for the statement that opens a turn. */
  private readonly historyLimits: Record<string, number>;
  /** Running turns per API key and sender, shared by every worker; none when both caps are off. */
  private readonly slots?: TurnSlots;
  private readonly ownSlots: boolean;
  private readonly deliveryRetries?: DeliveryRetries;

  /** Turns running in this worker now (its heartbeat reports them). */
  get runningTurns(): number {
    return this.stoppers.size;
  }

  constructor(private readonly deps: WorkerDeps) {
    this.historyLimits = Object.fromEntries(Object.entries(deps.config.agents).map(([name, a]) => [name, a.historyLimit]));
    const { limits, queue } = deps.config;
    const capped = limits.maxConcurrentTurnsPerKey > 0 || limits.maxConcurrentTurnsPerSender > 0;
    this.ownSlots = capped && !deps.slots;
    this.slots = capped ? (deps.slots ?? deps.openSlots()) : undefined;
    if (deps.deliveryQueue)
      this.deliveryRetries = new DeliveryRetries({
        queue: deps.deliveryQueue,
        store: deps.store,
        deliverers: deps.deliverers,
        deliverContext: deps.deliverContext,
        maxAttempts: queue.deliveryAttempts,
        locks: deps.locks,
        ...(deps.metrics ? { metrics: deps.metrics } : {}),
        log: deps.log.child({ component: 'delivery' }),
      });
  }

  start(): void {
    const { queue, config } = this.deps;
    // Each drain continues the trace its job carries (the message's, from the ingress process).
    queue.process(
      async (job) =>
        drainSpans(job, () =>
          this.drain(job.data.conversationId, job.signal, {
            deferred: job.data.deferred === true,
            scopes: job.data.scopes,
            // Set only on the first run of a drain started from a turn opened at accept (src/turn-opening.ts).
            opened: job.local as OpenedDrain | undefined,
          }),
        ),
      { concurrency: config.queue.concurrency },
    );
    // Approval deadlines: fail-closed expiry resumes the parked turn.
    this.deps.timers.process(async () => void (await this.deps.approvals.expire()), { concurrency: 1 });
    const hub = this.deps.events;
    if (hub) this.deps.eventQueue?.process(async (job) => hub.deliver(job.data, job.attempt), { concurrency: 4 });
    const retries = this.deliveryRetries;
    if (retries) this.deps.deliveryQueue?.process(async (job) => retries.run(job.data, job.attempt), { concurrency: 4 });
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
      // Parked turns whose approvals are all decided (an unpark or a drain job lost) run again.
      const resumed = await this.deps.approvals.resumeDecided();
      if (resumed) this.deps.log.info({ count: resumed }, 'recovery sweep resumed parked turns whose approvals are decided');
      const ids = await this.deps.store.stuckConversations(olderThanMs);
      for (const id of ids) await this.deps.queue.add({ conversationId: id }, { dedupKey: id });
      if (ids.length) this.deps.log.info({ count: ids.length }, 'recovery sweep re-drained conversations');
      return ids.length;
    } catch (err) {
      this.deps.log.warn({ err }, 'recovery sweep failed');
      return 0;
    }
  }

  /** For the ingress of this process: opens a one-off conversation's first turn in its accept statement when a slot is free here. */
  opener(): TurnOpener {
    const { queue, store, config, log } = this.deps;
    return turnOpener({ worker: this.id, queue, store, config, log: log.child({ component: 'worker' }) });
  }

  async drain(conversationId: string, signal: AbortSignal, opts: { deferred?: boolean; scopes?: SlotScope[]; opened?: OpenedDrain } = {}): Promise<void> {
    const { store, config, log } = this.deps;
    const ttl = config.queue.lockDurationMs;
    // The queue keeps one active and one waiting drain per conversation, and the
    // waiting one may start on another worker: the lease (on the conversation
    // row, taken in the same statement that opens the turn) lets one drain run.
    const lease = opts.opened?.lease ?? randomUUID();
    let held = false;
    // What this drain knows of its lease; the turn asks it before it acts (src/turn/lease-guard.ts).
    const guard = new LeaseGuard(lease, ttl, undefined, opts.opened?.sentAt);
    // The concurrency slots this drain holds (under its lease token) for the turn it runs.
    let slots: SlotScope[] = [];
    const start = async (claim: StartTurn['claim']) => {
      const sentAt = Date.now();
      const s = await store.startTurn({
        conversationId,
        worker: this.id,
        lease,
        leaseMs: ttl,
        claim,
        modes: { default: config.conversations.queueMode, byChannel: config.conversations.queueModeByChannel },
        historyLimits: this.historyLimits,
        memoryLimit: TURN_MEMORY_LIMIT,
      });
      // The statement took or renewed the lease.
      if (s.conversation) guard.renewed(sentAt);
      return s;
    };
    const renew = setInterval(
      () => {
        // A missed renewal is retried at the next tick; the lease outlives two of them, and
        // the guard's deadline (the last renewal that succeeded + ttl) stops the turn before it expires.
        if (held)
          guard
            .renew(() => store.renewLease(conversationId, lease, ttl))
            .catch((err: unknown) => this.deps.log.debug({ err, conversation: conversationId }, 'renewing the conversation lease failed'));
        if (slots.length)
          this.slots
            ?.renew(slots, lease, ttl)
            .catch((err: unknown) => this.deps.log.debug({ err, conversation: conversationId }, 'renewing the turn slots failed'));
      },
      Math.max(250, Math.floor(ttl / 3)),
    );
    const work = (async () => {
      try {
        // The retry of a refused drain asks the counter first: while its key is still at the cap it waits on, without a statement.
        if (opts.scopes?.length && this.slots) {
          if (!(await this.takeSlots(opts.scopes, lease, ttl, conversationId))) return void (await this.defer(conversationId, opts.scopes));
          slots = opts.scopes;
        }
        // A turn opened at accept holds the lease from that statement on (the guard counts from it), and
        // starts from what it returned. One that starts late (an ingress step after the statement was slow)
        // renews first, so that the lease does not run out before the first renewal; lost, another drain has the turn.
        if (opts.opened && Date.now() - opts.opened.sentAt > ttl / 3)
          await guard
            .renew(() => store.renewLease(conversationId, lease, ttl))
            .catch((err: unknown) => log.debug({ err, conversation: conversationId }, 'renewing the lease of a turn opened at accept failed'));
        if (opts.opened && !guard.check()) return;
        let s = opts.opened?.started ?? (await start('auto'));
        // Another drain holds the lease: wait for it (or for its lease to expire, if its worker died).
        const busyUntil = Date.now() + ttl + 5_000;
        for (let delay = 10; !s.conversation; delay = Math.min(delay * 2, 250)) {
          if (!s.hasWork) return; // nothing waits, or a parked turn holds the conversation
          // A drain for fairness does not wait on a busy conversation (and hold a worker's slot meanwhile).
          if (opts.deferred) return void (await this.defer(conversationId));
          if (Date.now() >= busyUntil || signal.aborted) throw new ConversationBusyError(conversationId);
          await new Promise((r) => setTimeout(r, delay));
          s = await start('auto');
        }
        held = true;
        const conv = s.conversation;
        // A batch still queued when the lease is lost is dropped, not published.
        const publisher = new EventPublisher(this.deps.bus, conversationTopic(conv.key), () => guard.check());
        let stale = false;
        for (let n = 0; ; ) {
          if (!s.conversation) return; // nothing left (the lease is given back below)
          if (guard.lost) return;
          if (!s.turn || !s.batch || !s.context) {
            const pending = s.pending;
            if (s.mode === 'collect' && !pending.some((r) => r.turnId)) {
              // Wait for a pause: answer the burst together.
              const newest = Math.max(...pending.map((r) => r.receivedAt.getTime()));
              const wait = config.conversations.collectQuietMs - (Date.now() - newest);
              if (wait > 0) {
                await new Promise((r) => setTimeout(r, wait));
                s = await start('none');
                if (s.conversation && Math.max(...s.pending.map((r) => r.receivedAt.getTime())) > newest) continue;
              }
              s = await start('all');
              continue;
            }
            // The statement read a snapshot from before the previous holder closed
            // its turn: read again, now holding the lease.
            if (stale) throw new StaleInboxError(pending.find((r) => r.turnId)?.turnId ?? '?');
            stale = true;
            s = await start('auto');
            continue;
          }
          stale = false;
          const { turn, batch, context } = s;
          // One key (or sender) may run only so many turns at once, across every worker.
          const want = this.slots ? turnScopes(config, conv, batch[0] && parseIdentity(senderIdentity(batch[0]))) : [];
          if (!sameScopes(slots, want)) {
            const had = slots;
            slots = [];
            if (had.length) await this.releaseSlots(had, lease, conversationId);
            if (want.length && !(await this.takeSlots(want, lease, ttl, conversationId))) {
              // At the cap: put the turn back as it was (nothing ran, nothing is consumed) and
              // give up the lease; a release of that key's slot wakes this conversation again.
              await store.deferTurn(turn.id, conversationId, lease);
              held = false;
              log.debug({ conversation: conversationId, scopes: want.map((w) => w.key) }, 'turn deferred: its key or sender is at its cap on concurrent turns');
              await this.defer(conversationId, want);
              return;
            }
            slots = want;
          }
          const turnLog = log.child({ conversation: conversationId, turn: turn.id, attempt: turn.attempt });
          turnLog.debug('turn start');
          let next: InboxMessage[] | null;
          // /stop (or an interrupting message) from any process aborts this turn.
          const stop = new AbortController();
          this.stoppers.set(conv.key, stop);
          const control = { close: () => this.stoppers.get(conv.key) === stop && this.stoppers.delete(conv.key) };
          const turnSignal = linkedSignal(signal, stop.signal, guard.signal);
          // The turn's span (a child of the drain's): its model calls, tool calls and delivery are its children.
          const { span: turnSpan, ctx: turnCtx } = startTurnSpan({
            conversationId,
            channel: conv.channel,
            turnId: turn.id,
            attempt: turn.attempt,
            inboxIds: batch.map((r) => r.id),
            traceparents: batch.map((r) => r.traceparent),
          });
          try {
            const target = storedTurnTarget(turn, conv, batch);
            const delivery = this.deps.deliverers.get(conv.channel)?.open(target, {
              ...this.deps.deliverContext,
              deliveries: fencedDeliveries(this.deps.deliverContext.deliveries, turn.id, turn.attempt, guard),
              // Asked right before each platform call, not only when the edit was queued.
              fence: () => guard.check(),
            });
            // A channel failing once the text is final hands the reply to the delivery queue; the turn closes as usual.
            const retries = this.deliveryRetries;
            const inboxIds = batch.map((r) => r.id);
            const handOver = retries ? { handOver: (f: FailedDelivery) => retries.handOver(target, inboxIds, f) } : {};
            // The turn's one sink: the log line, metrics, the bus, the channel's delivery, the event
            // webhooks, behind the lease gate: once the lease is lost nothing more leaves.
            const fanned = fanOut(
              [
                { name: 'log', sink: logSink(turnLog, conv.channel) },
                this.deps.metrics ? { name: 'metrics', sink: metricsSink(this.deps.metrics, conv.channel) } : undefined,
                { name: 'bus', sink: busSink(publisher) },
                delivery
                  ? {
                      name: `delivery:${conv.channel}`,
                      // A scheduled run's reply that is NOTHING_TO_SAY is not sent (src/schedules/policy.ts).
                      sink: scheduledBatch(batch)
                        ? nothingToSayGate(deliverySink(delivery, { ...handOver, log: turnLog }))
                        : deliverySink(delivery, { ...handOver, log: turnLog }),
                    }
                  : undefined,
                this.deps.events ? { name: 'event-webhooks', sink: eventWebhookSink(this.deps.events, conv) } : undefined,
              ],
              turnLog,
            );
            const sink = traceSink(leaseGate(fanned, guard, turnLog), turnSpan, turnCtx, conv.channel);
            next = await within(turnCtx, () =>
              runTurn({
                job: { conversation: conv, turn, batch, context: { ...context, lease }, leaseGuard: guard, trace: new TurnTrace(turnCtx, conversationId) },
                deps: this.deps,
                sink,
                signal: turnSignal.signal,
              }),
            );
          } catch (err) {
            failSpan(turnSpan, err);
            throw err;
          } finally {
            turnSpan.end();
            control.close();
            turnSignal.dispose();
            await publisher.drain();
          }
          turnLog.debug('turn done');
          // Closing the turn with nothing else waiting gave the lease back.
          if (next?.length === 0) {
            held = false;
            return;
          }
          if (guard.lost) {
            // Another drain may hold the turn now and finishes it; if none took the lease, it is
            // given back below (only while it is still this token) and the recovery sweep re-drains.
            turnLog.warn({ err: guard.signal.reason }, 'the conversation lease was lost mid-turn: the turn was stopped and nothing more of it was published');
            return;
          }
          if (++n >= TURNS_PER_JOB) break;
          // Parked, closed elsewhere, or more waiting: the next statement tells.
          s = await start('auto');
        }
        // More waiting than one job should take in a row: let other conversations run.
        await this.deps.queue.add({ conversationId, ...jobTrace() }, { dedupKey: conversationId });
      } finally {
        clearInterval(renew);
        if (held)
          await store
            .releaseLease(conversationId, lease)
            .catch((err: unknown) => this.deps.log.debug({ err, conversation: conversationId }, 'releasing the conversation lease failed; it expires'));
        if (slots.length) await this.releaseSlots(slots, lease, conversationId);
      }
    })();
    this.running.add(work);
    try {
      await work;
    } finally {
      this.running.delete(work);
    }
  }

  /** Drains the conversation again a little later (its own dedup key, so that a wake is never folded into it). */
  private async defer(conversationId: string, scopes?: SlotScope[]): Promise<void> {
    const job: DrainJob = { conversationId, deferred: true, ...(scopes?.length ? { scopes } : {}), ...jobTrace() };
    await this.deps.queue.add(job, { dedupKey: `${conversationId}:deferred`, delayMs: DEFER_RETRY_MS + Math.floor(Math.random() * 1_000) });
  }

  /** True when the slots are this drain's; false at the cap. Fails open: a counter that cannot answer does not stop turns. */
  private async takeSlots(scopes: SlotScope[], lease: string, ttl: number, conversationId: string): Promise<boolean> {
    try {
      const r = await withTimeout(this.slots!.acquire(scopes, lease, ttl, conversationId), SLOT_TIMEOUT_MS);
      return r.acquired;
    } catch (err) {
      this.deps.log.warn({ err, conversation: conversationId }, 'the turn slot counter did not answer; running the turn uncounted');
      return true;
    }
  }

  /** Gives slots back and wakes the conversations that waited for them. A lost release expires with its lease. */
  private async releaseSlots(scopes: SlotScope[], lease: string, conversationId: string): Promise<void> {
    try {
      const woken = await withTimeout(this.slots!.release(scopes, lease), SLOT_TIMEOUT_MS);
      for (const id of woken) if (id !== conversationId) await this.deps.queue.add({ conversationId: id, deferred: true }, { dedupKey: id });
    } catch (err) {
      this.deps.log.debug({ err, conversation: conversationId }, 'releasing turn slots failed; they expire with the lease');
    }
  }

  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.controlSub?.close();
    await Promise.allSettled([...this.running]);
    await this.deliveryRetries?.idle();
    if (this.ownSlots) await this.slots?.close();
  }
}

function sameScopes(a: SlotScope[], b: SlotScope[]): boolean {
  return a.length === b.length && a.every((s, i) => s.key === b[i]!.key && s.cap === b[i]!.cap);
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}
