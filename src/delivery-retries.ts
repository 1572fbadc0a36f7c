import type { Logger } from 'pino';
import { acquire, type LockService } from '../adapters/lock/port.js';
import type { JobQueue } from '../adapters/queue/port.js';
import type { GatewayStore, InboxMessage } from '../adapters/store/ports/index.js';
import { errorCode, ignoreError, SwitchboardError } from '../kernel/errors.js';
import type { DeliveryJob } from '../kernel/jobs.js';
import { type DeliverContext, type StoredTurnTarget, storedTurnTarget, type TurnDeliverer } from './channel/deliver.js';
import { ChannelDeliveryError } from './channel/delivery-error.js';
import { ReplyToError } from './channel/reply-to.js';
import type { Metrics } from './metrics.js';
import { ATTR, contextOf, deliveryOutcome, inSpan, SpanKind, traceparentOf } from './telemetry/tracer.js';
import type { FailedDelivery } from './turn/sinks/delivery-sink.js';

export interface DeliveryRetryDeps {
  queue: JobQueue<DeliveryJob>;
  store: Pick<GatewayStore, 'conversation' | 'inboxRow'>;
  deliverers: Map<string, TurnDeliverer>;
  /** Its deliveries repository also keeps the dead letters. */
  deliverContext: DeliverContext;
  /** queue.deliveryAttempts: the last one failing dead-letters the reply. */
  maxAttempts: number;
  /** Where replays of one turn take turns (every process's delivery jobs): without it, they are not serialized. */
  locks?: LockService;
  metrics?: Metrics;
  log: Logger;
}

/** The lock a turn's replays take turns on (DeliveryRetries.oneAtATime), in every process. */
export function deliveryKey(turnId: string): string {
  return `delivery:${turnId}`;
}

/**
 * Delivery, separate from thinking: a reply whose channel failed once the turn's text was final
 * (the delivery sink's flush, in settle or park) is handed here while the turn closes as usual. A
 * delivery job replays the turn's events into a new delivery of the channel (a later attempt, so
 * the deliverer resumes from the deliveries table: it edits what was posted and posts what is
 * missing, approval requests included), with its own retries. A refusal (retryable false) or the
 * last attempt failing is a dead letter: logged at error, counted, listed for the operator
 * (GET /v1/deliveries/dead-letters, `switchboard status`). The model is never asked again.
 */
export class DeliveryRetries {
  private readonly handing = new Set<Promise<void>>();

  constructor(private readonly deps: DeliveryRetryDeps) {}

  /** From the delivery sink (synchronous): queues the replay, or dead-letters a refusal at once. */
  /** `inboxIds`: the messages the turn answers (the replay reads their reply target again). */
  handOver(target: StoredTurnTarget, inboxIds: number[], failure: FailedDelivery): void {
    const channel = target.conversation.channel;
    // Called within the turn's span: the replays are spans of the turn's trace.
    const traceparent = traceparentOf();
    const job: DeliveryJob = {
      turnId: target.turnId,
      turnAttempt: target.attempt,
      conversationId: target.conversation.id,
      channel,
      inboxIds,
      events: failure.events,
      ...(traceparent ? { traceparent } : {}),
    };
    const p = (async () => {
      if (permanent(failure.error)) return this.deadLetter(job, failure.error, 1);
      // No deduplication: a turn may hand over twice (parked, then settled), the later replay with more events.
      await this.deps.queue.add(job);
      this.deps.metrics?.deliveryJobs.inc({ channel, outcome: 'queued' });
      this.deps.log.warn(
        { turn: job.turnId, conversation: job.conversationId, channel, code: codeOf(failure.error), err: failure.error },
        'the reply could not be delivered; the turn is closed and a delivery job will try again',
      );
    })()
      .catch((err: unknown) =>
        this.deps.log.error({ err, turn: job.turnId, channel, cause: failure.error }, 'could not queue the delivery job of a reply; it is lost'),
      )
      .finally(() => this.handing.delete(p));
    this.handing.add(p);
  }

  /** The delivery queue's handler: one replay (a `deliver <channel>` span per attempt, in the turn's trace); throws to be retried. */
  run(job: DeliveryJob, attempt: number): Promise<void> {
    const attributes = { [ATTR.channel]: job.channel, [ATTR.turn]: job.turnId, [ATTR.jobAttempt]: attempt };
    return inSpan(`deliver ${job.channel}`, { kind: SpanKind.PRODUCER, parent: contextOf(job.traceparent), attributes }, () => this.runOnce(job, attempt));
  }

  private async runOnce(job: DeliveryJob, attempt: number): Promise<void> {
    const { channel } = job;
    const log = this.deps.log.child({ turn: job.turnId, conversation: job.conversationId, channel, deliveryAttempt: attempt });
    try {
      await this.oneAtATime(job.turnId, () => this.replay(job, attempt));
      this.deps.metrics?.deliveryJobs.inc({ channel, outcome: 'delivered' });
      deliveryOutcome('delivered');
      log.info('the reply was delivered by its delivery job');
    } catch (err) {
      if (permanent(err) || attempt >= this.deps.maxAttempts) {
        deliveryOutcome('dead_letter', err);
        return this.deadLetter(job, err, attempt);
      }
      this.deps.metrics?.deliveryJobs.inc({ channel, outcome: 'retry' });
      deliveryOutcome('retry');
      log.warn({ err, code: codeOf(err) }, 'the delivery job failed; it will be retried');
      throw err;
    }
  }

  /**
   * Runs one replay of a turn while no other runs, in any process: two at once (a turn handed over
   * when it parked and again when it settled, or the same message queued twice) would both find
   * nothing posted in the deliveries table and both post it. One after the other, the second finds
   * what the first posted and resumes from there. The lock outlives a dead holder by REPLAY_LOCK_MS.
   */
  private async oneAtATime(turnId: string, replay: () => Promise<void>): Promise<void> {
    const locks = this.deps.locks;
    if (!locks) return replay();
    const lease = await acquire(locks, deliveryKey(turnId), REPLAY_LOCK_MS, REPLAY_LOCK_MS);
    if (!lease) throw new DeliveryBusy(`another delivery of turn ${turnId} has run for ${REPLAY_LOCK_MS / 1000} s`);
    const renew = setInterval(() => void lease.renew().catch(ignoreError('the next renewal tries again')), REPLAY_LOCK_MS / 3);
    try {
      await replay();
    } finally {
      clearInterval(renew);
      await lease.release().catch(ignoreError('the lock lapses on its own'));
    }
  }

  private async replay(job: DeliveryJob, attempt: number): Promise<void> {
    const deliverer = this.deps.deliverers.get(job.channel);
    if (!deliverer) throw new DeliveryGone(`the channel ${job.channel} is not configured here`);
    const conversation = await this.deps.store.conversation(job.conversationId);
    if (!conversation) throw new DeliveryGone(`conversation ${job.conversationId} is gone`);
    const batch = (await Promise.all(job.inboxIds.map((id) => this.deps.store.inboxRow(id)))).filter((r): r is InboxMessage => !!r);
    // A later attempt than any the turn had: the deliverer resumes from what was posted.
    const turnAttempt = job.turnAttempt + attempt;
    const delivery = deliverer.open(storedTurnTarget({ id: job.turnId, attempt: turnAttempt }, conversation, batch), this.deps.deliverContext);
    for (const e of job.events) delivery.event(e.type === 'turn_start' ? { ...e, attempt: turnAttempt } : e);
    await delivery.close();
  }

  private async deadLetter(job: DeliveryJob, err: unknown, attempts: number): Promise<void> {
    const code = codeOf(err);
    const error = (err as Error)?.message ?? String(err);
    this.deps.metrics?.deliveryJobs.inc({ channel: job.channel, outcome: 'dead' });
    this.deps.metrics?.deadDeliveries.inc({ channel: job.channel, code });
    this.deps.log.error(
      { turn: job.turnId, conversation: job.conversationId, channel: job.channel, code, attempts, err },
      'the reply could not be delivered; dead-lettered (GET /v1/deliveries/dead-letters)',
    );
    await this.deps.deliverContext.deliveries.deadLetter({
      turnId: job.turnId,
      conversationId: job.conversationId,
      channel: job.channel,
      code,
      error,
      attempts,
    });
  }

  /** Waits for hand-overs still being queued (the worker's close). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.handing]);
  }
}

/** Nothing to deliver to any more: the channel or the conversation is gone. */
class DeliveryGone extends SwitchboardError {
  readonly code = 'delivery_target_gone';
}

/** Another replay of the same turn held the lock for as long as this one waited: retried later. */
class DeliveryBusy extends SwitchboardError {
  readonly code = 'delivery_busy';
  override readonly retryable = true;
}

/** How long a replay holds its turn's lock without renewing it (renewed every third of it). */
const REPLAY_LOCK_MS = 30_000;

/** Retrying cannot help: a SwitchboardError that says so (a platform's refusal), or a reply target the channel rejects. */
function permanent(err: unknown): boolean {
  return (err instanceof SwitchboardError && !err.retryable) || err instanceof ReplyToError;
}

/** `channel_delivery_failed:internal_error`: ours, then the platform's. */
function codeOf(err: unknown): string {
  if (err instanceof ChannelDeliveryError) return err.platformCode ? `${err.code}:${err.platformCode}` : err.code;
  if (err instanceof ReplyToError) return 'invalid_reply_target';
  return errorCode(err) ?? 'delivery_error';
}
