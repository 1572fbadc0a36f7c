import pLimit from 'p-limit';
import type { JobHandler, JobOptions, JobQueue, WorkerOptions } from './port.js';
import { isPermanentFailure } from './retry-policy.js';

/** The field of a coalesced job that carries every job after the first (whose own fields are the job's). */
export const COALESCED = 'coalesced';

/** A job of the inner queue: one job's fields, and the jobs coalesced with it. */
export type Carrier<T> = T & { [COALESCED]?: T[] };

/**
 * Jobs added in the same turn of the event loop without a deduplication key or a delay leave as
 * one job of the inner queue, and process() runs them as separate jobs again. On BullMQ a job
 * costs ~30 Redis commands (its add, its move to active, its finish), whatever it carries: under
 * load, when many messages are accepted at once, a turn then pays a share of one job instead of
 * a whole one. A lone add leaves at the end of the same event-loop turn (setImmediate), so a
 * quiet gateway waits for nothing.
 *
 * The carrier is the first job's own fields plus `coalesced` (the rest): a worker from before
 * this queue runs the first and ignores the rest, which its recovery sweep then finds.
 *
 * Only for idempotent handlers (the drain: it reads the inbox and the lease, and a drain with
 * nothing to do returns): a carrier one of whose jobs failed is retried whole, so the jobs that
 * succeeded run again. Jobs with a deduplication key keep their own job (the queue's
 * one-active-one-waiting rule is per job), and so do delayed ones.
 *
 * A process runs at most `concurrency` of the carried jobs at once, carriers or not: a carrier
 * counts as one job to the inner queue's worker.
 */
export class CoalescingQueue<T extends object> implements JobQueue<T> {
  private pending: Array<{ data: T; settle: (err?: unknown) => void }> = [];
  private flushQueued = false;
  private closing = false;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly inner: JobQueue<Carrier<T>>,
    /** The most jobs one carrier takes. */
    private readonly max: number,
  ) {}

  add(data: T, opts: JobOptions = {}): Promise<void> {
    if (opts.dedupKey !== undefined || opts.delayMs || this.max <= 1 || this.closing) return this.inner.add(data, opts);
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ data, settle: (err) => (err === undefined ? resolve() : reject(err)) });
      if (this.pending.length >= this.max) this.flush();
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
      const batch = this.pending.splice(0, this.max);
      const [first, ...rest] = batch;
      const carrier = (rest.length ? { ...first!.data, [COALESCED]: rest.map((r) => r.data) } : first!.data) as Carrier<T>;
      const sent = this.inner.add(carrier).then(
        () => batch.forEach((b) => b.settle()),
        (err: unknown) => batch.forEach((b) => b.settle(err ?? new Error('enqueue failed'))),
      );
      this.inFlight.add(sent);
      void sent.finally(() => this.inFlight.delete(sent));
    }
  }

  process(handler: JobHandler<T>, opts: WorkerOptions): void {
    const slot = pLimit(opts.concurrency);
    this.inner.process(async (job) => {
      const { [COALESCED]: more, ...first } = job.data;
      const jobs = [first as T, ...(Array.isArray(more) ? more : [])];
      const results = await Promise.allSettled(jobs.map((data) => slot(() => handler({ ...job, data }))));
      const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      if (!failed.length) return;
      // A retryable failure retries the carrier (the rest find nothing left to do); only when every failure is
      // permanent does the carrier fail at once, as a lone job would.
      throw failed.find((err) => !isPermanentFailure(err)) ?? failed[0];
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

  /** Sends what waits to be coalesced (its adds are already promised to their callers), then closes the inner queue. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing = true;
      this.flush();
      await Promise.allSettled([...this.inFlight]);
      await this.inner.close();
    })();
    return this.closed;
  }
}
