import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { JobQueue } from '../../adapters/queue/port.js';
import type { WebhookRepository } from '../../adapters/store/ports/webhooks.js';
import { SwitchboardError } from '../../kernel/errors.js';
import { signedHeaders } from '../../kernel/hmac-signature.js';
import { EVENT_TYPES, type EventJob, type EventType, type OutboundEvent } from '../../kernel/jobs.js';
import { safeFetch } from '../../moat/ssrf.js';
import type { Config } from '../config.js';

export { EVENT_TYPES, type EventJob, type EventType, type OutboundEvent };

interface Subscriber {
  id: string;
  url: string;
  secretEnv: string;
  events: string[];
  allowCidrs: string[];
}

/**
 * Outbound event webhooks. emit() only enqueues (a turn never waits for a
 * subscriber); the queue delivers each event to each subscriber, signed,
 * retried with backoff, and dead-letters it after webhooks.maxAttempts.
 */
export class EventHub {
  constructor(
    private readonly deps: { queue: JobQueue<EventJob>; store: WebhookRepository; config: Config; log: Logger; env: Record<string, string | undefined> },
  ) {}

  private cache?: { at: number; list: Promise<Subscriber[]> };

  /** Subscribers from configuration and the store, re-read at most every 5 s (emit() runs on every turn). */
  private subscribers(): Promise<Subscriber[]> {
    if (!this.cache || Date.now() - this.cache.at > 5_000) this.cache = { at: Date.now(), list: this.load() };
    return this.cache.list;
  }

  private async load(): Promise<Subscriber[]> {
    const fromConfig = this.deps.config.webhooks.subscribers.map((s) => ({ ...s, allowCidrs: s.allowCidrs }));
    const fromDb = (await this.deps.store.subscribers()).map((s) => ({
      id: s.id,
      url: s.url,
      secretEnv: s.secretEnv,
      events: s.events,
      allowCidrs: [] as string[],
    }));
    return [...fromConfig, ...fromDb.filter((d) => !fromConfig.some((c) => c.id === d.id))];
  }

  /** Never throws and never waits for delivery. */
  emit(type: EventType, data: Record<string, unknown>): void {
    void (async () => {
      const event: OutboundEvent = { id: `evt_${randomUUID()}`, type, at: new Date().toISOString(), data };
      for (const s of await this.subscribers()) {
        if (s.events.includes(type) || s.events.includes('*')) await this.deps.queue.add({ subscriber: s.id, event });
      }
    })().catch((err: unknown) => this.deps.log.warn({ err, type }, 'could not queue an outbound event'));
  }

  /**
   * The queue's handler: one delivery attempt; throws to retry. A failure that would repeat (the
   * subscriber refusing the event with a 4xx, its secret unset, its URL blocked) is dead-lettered at
   * once and thrown as permanent, so the queue does not retry it; any other is dead-lettered on the last attempt.
   */
  async deliver(job: EventJob, attempt: number): Promise<void> {
    const s = (await this.subscribers()).find((x) => x.id === job.subscriber);
    if (!s) return;
    // Own variables only: a secretEnv of "constructor" (added over the API) names no secret.
    const secret = Object.hasOwn(this.deps.env, s.secretEnv) ? this.deps.env[s.secretEnv] : undefined;
    const max = this.deps.config.webhooks.maxAttempts;
    let failure: EventDeliveryError;
    if (!secret) failure = new EventDeliveryError(s.id, `environment variable ${s.secretEnv} is not set`, false);
    else {
      const body = JSON.stringify(job.event);
      try {
        const res = await safeFetch(s.url, {
          method: 'POST',
          headers: { ...signedHeaders(secret, body), 'x-switchboard-event': job.event.type, 'x-switchboard-delivery': job.event.id },
          body,
          allowCidrs: s.allowCidrs,
          timeoutMs: 10_000,
          maxRedirects: 0,
        });
        if (res.status >= 200 && res.status < 300) return;
        failure = new EventDeliveryError(s.id, `HTTP ${res.status}`, retryableStatus(res.status));
      } catch (err) {
        // A network error may pass; the SSRF guard's refusal (not retryable) will not.
        failure = new EventDeliveryError(s.id, (err as Error).message, !(err instanceof SwitchboardError) || err.retryable, err);
      }
    }
    if (!failure.retryable || attempt >= max) {
      await this.deps.store.deadLetter(s.id, job.event, failure.message, attempt);
      if (!failure.retryable) throw failure; // the queue logs it once, with its code
      this.deps.log.warn({ subscriber: s.id, event: job.event.type, error: failure.message }, 'webhook event dead-lettered');
      return;
    }
    throw failure;
  }
}

/** One failed delivery of an event to a subscriber; retryable unless trying again repeats it. */
export class EventDeliveryError extends SwitchboardError {
  readonly code = 'event_delivery_failed';
  override readonly retryable: boolean;
  constructor(
    /** The subscriber's id (in the queue's log line). */
    readonly subscriber: string,
    message: string,
    retryable: boolean,
    cause?: unknown,
  ) {
    super(message, { cause });
    this.retryable = retryable;
  }
}

/** A subscriber's answer worth trying again: a 5xx, a timeout (408), too early (425) or too many (429). Other 4xx refuse the event itself. */
function retryableStatus(status: number): boolean {
  return !(status >= 400 && status < 500) || status === 408 || status === 425 || status === 429;
}
