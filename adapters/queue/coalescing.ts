import pLimit from 'p-limit';
import type { LogSink } from '../../kernel/log.js';
import { settlesWithin } from '../../kernel/settles-within.js';
import type { JobContext, JobHandler, JobOptions, JobQueue, WorkerOptions } from './port.js';

/** The field of a coalesced job that carries every job after the first (whose own fields are the job's). */
export const COALESCED = 'coalesced';

/** A job of the inner queue: one job's fields, and the jobs coalesced with it. */
export type Carrier<T> = T & { [COALESCED]?: T[] };

/** How long close() waits for the coalesced adds it sent (an add never answers while Redis is away). */
const FLUSH_GRACE_MS = 5_000;

export interface CoalescingSettings {
  /** The most jobs one carrier takes; 1: none are coalesced here, and a carrier from elsewhere is split (below). */
  max: number;
  /** The delay before a carried job that failed runs again, as a job of its own. */
  retryDelayMs: number;
}

/**
 * Jobs added in the same turn of the event loop without a deduplication key or a delay leave as
 * one job of the inner queue (a carrier), and process() runs them as separate jobs again. On
 * BullMQ a job costs ~30 Redis commands (its add, its move to active, its finish), whatever it
 * carries: under load, when many messages are accepted at once, a turn then pays a share of one
 * job instead of a whole one. A lone add leaves at the end of the same event-loop turn
 * (setImmediate), so a quiet gateway waits for nothing.
 *
 * The carrier is the first job's own fields plus `coalesced` (the rest): a worker from before
 * this queue runs the first and ignores the rest, which its recovery sweep then finds.
 *
 * Only for idempotent handlers (the drain: it reads the inbox and the lease, and a drain with
 * nothing to do returns): a carrier whose process died is run again whole by the next worker.
 * Jobs with a deduplication key keep their own job (the queue's one-active-one-waiting rule is
 * per job), and so do delayed ones.
 *
 * What a process holds stays near its `concurrency`: it runs at most that many carried jobs at
 * once, and while a carrier runs, the inner worker takes that many fewer jobs (setConcurrency), so
 * one worker does not take a backlog that idle ones could run. A carried job that fails leaves as
 * a job of its own, with its own retries and dead letter, without waiting for the others. A process
 * that does not coalesce (`max` 1: a global cap on turns counts jobs) runs a carrier's first job and
 * sends the others back as jobs of their own.
 */
export class CoalescingQueue<T extends object> implements JobQueue<T> {
  private pending: Array<{ data: T; settle: (err?: unknown) => void }> = [];
  private flushQueued = false;
  private closing = false;
  /** Carriers sent and not yet answered, with the adds each one settles. */
  private readonly inFlight = new Map<Promise<void>, Array<{ settle: (err?: unknown) => void }>>();

  constructor(
    private readonly inner: JobQueue<Carrier<T>>,
    private readonly settings: CoalescingSettings,
    private readonly log?: LogSink,
  ) {}

  add(data: T, opts: JobOptions = {}): Promise<void> {
    if (opts.dedupKey !== undefined || opts.delayMs || this.settings.max <= 1 || this.closing) return this.inner.add(data, opts);
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ data, settle: (err) => (err === undefined ? resolve() : reject(err)) });
      if (this.pending.length >= this.settings.max) this.flush();
      else if (!this.flushQueued) {
        this.flushQueued = true;
        setImmediate(() => {
          this.flushQueued = false;
          this.flush();
        });
      }
    });
  }

  /** Sends what waits, as carriers of at most `max` jobs; each add settles with its carrier's. */
  private flush(): void {
    while (this.pending.length) {
      const batch = this.pending.splice(0, this.settings.max);
      const [first, ...rest] = batch;
      const carrier = (rest.length ? { ...first!.data, [COALESCED]: rest.map((r) => r.data) } : first!.data) as Carrier<T>;
      const sent = this.inner.add(carrier).then(
        () => batch.forEach((b) => b.settle()),
        (err: unknown) => batch.forEach((b) => b.settle(err ?? new Error('enqueue failed'))),
      );
      this.inFlight.set(sent, batch);
      void sent.finally(() => this.inFlight.delete(sent));
    }
  }

  process(handler: JobHandler<T>, opts: WorkerOptions): void {
    const slot = pLimit(opts.concurrency);
    // Jobs held beyond one per inner job: the inner worker takes that many fewer.
    let extra = 0;
    const hold = (n: number) => {
      extra += n;
      this.inner.setConcurrency?.(opts.concurrency - extra);
    };
    this.inner.process(async (job) => {
      const { [COALESCED]: more, ...first } = job.data;
      const rest = Array.isArray(more) ? (more as T[]) : [];
      if (!rest.length) return slot(() => handler(job as JobContext<T>));
      if (this.settings.max <= 1) {
        // Each of the others counts as a job of its own here (sent before the first runs: a failed send retries the carrier).
        for (const data of rest) await this.inner.add(data as Carrier<T>);
        return slot(() => handler({ ...job, data: first as T }));
      }
      hold(rest.length);
      try {
        const runs = [first as T, ...rest].map((data) =>
          slot(async () => {
            try {
              await handler({ ...job, data });
            } catch (err) {
              // Its retries (and, in the end, its dead letter) are its own; a failed send retries the carrier.
              this.log?.debug({ err, job: job.id }, 'a coalesced job failed; it runs again as a job of its own');
              await this.inner.add(data as Carrier<T>, { delayMs: this.settings.retryDelayMs });
            }
          }),
        );
        const failed = (await Promise.allSettled(runs)).find((r) => r.status === 'rejected');
        if (failed) throw failed.reason;
      } finally {
        hold(-rest.length);
      }
    }, opts);
  }

  available(graceMs: number): Promise<boolean> {
    return this.inner.available ? this.inner.available(graceMs) : Promise.resolve(true);
  }

  counts() {
    return this.inner.counts();
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  async stopTaking(): Promise<void> {
    await this.inner.stopTaking?.();
  }

  private closed?: Promise<void>;

  /**
   * Sends what waits to be coalesced (its adds are already promised to their callers), waits for
   * those sends (at most FLUSH_GRACE_MS: with Redis away they never answer; past it their adds fail),
   * then closes the inner queue.
   */
  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing = true;
      this.flush();
      if (!(await settlesWithin(Promise.allSettled([...this.inFlight.keys()]), FLUSH_GRACE_MS))) {
        this.log?.warn({ carriers: this.inFlight.size }, 'coalesced jobs were not sent before the queue closed; the recovery sweep drains their conversations');
        // Their callers hear it now (a later answer settles nothing twice).
        const unsent = new Error('the queue closed before this job was sent');
        for (const batch of this.inFlight.values()) for (const b of batch) b.settle(unsent);
      }
      await this.inner.close();
    })();
    return this.closed;
  }
}
