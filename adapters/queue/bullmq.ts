import { type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { LogSink } from '../../kernel/log.js';
import { settlesWithin } from '../../kernel/settles-within.js';
import { createRedis, disconnectForGood, whenReady } from '../redis.js';
import type { JobHandler, JobOptions, JobQueue, QueueSettings, WorkerOptions } from './port.js';
import { isPermanentFailure } from './retry-policy.js';

/**
 * How long BullMQ's own teardown may take once this process's jobs have finished. BullMQ 6.7's
 * Worker.close() waits for an 'end' event that a client parked in ioredis' "reconnecting" state
 * never emits (Redis unreachable, or restarted at the wrong moment: taskforcesh/bullmq#4656), so
 * it can hang forever; after this bound the connections are dropped instead.
 */
const TEARDOWN_GRACE_MS = 5_000;

export interface BullSettings extends QueueSettings {
  prefix: string;
  /** How long a worker's lock on a job lasts without renewal: a killed worker's job is retried after this. */
  lockDurationMs: number;
  stalledIntervalMs: number;
}

/**
 * BullMQ on Redis. Per-conversation serialization uses deduplication with
 * keepLastIfActive (one active + one waiting per conversation), so it needs no
 * BullMQ Pro groups.
 */
export class BullQueue<T> implements JobQueue<T> {
  private readonly queue: Queue;
  private worker?: Worker;
  /** Every connection this queue opened, the ones BullMQ duplicates from them included (its blocking client). */
  private readonly conns: Redis[] = [];
  /** This process's jobs now running, and who waits for them to end (close()). */
  private running = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly name: string,
    private readonly url: string,
    private readonly settings: BullSettings,
    /** Where the queue's and worker's errors go (the gateway's logger; app/infra.ts). */
    private readonly log?: LogSink,
  ) {
    const conn = this.conn();
    this.queue = new Queue(name, {
      connection: conn,
      prefix: settings.prefix,
      defaultJobOptions: {
        attempts: settings.attempts,
        backoff: { type: 'exponential', delay: settings.backoffMs },
        // Nothing reads a completed job back (the store has the turn): deleting it at once costs one
        // DEL inside BullMQ's finishing script, where keeping the last 1,000 cost four commands per job.
        removeOnComplete: true,
        removeOnFail: { age: 7 * 24 * 3600 },
      },
    });
    this.queue.on('error', (err) => this.reportError(err, 'queue'));
    // A cap shared by every worker process, kept in Redis by BullMQ.
    if (settings.globalConcurrency) {
      void this.queue
        .setGlobalConcurrency(settings.globalConcurrency)
        .catch((err: unknown) =>
          this.log?.warn(
            { err, queue: name, globalConcurrency: settings.globalConcurrency },
            'could not set the global concurrency cap; turns are capped per process only',
          ),
        );
    }
  }

  /**
   * BullMQ's error events. A lost connection is already reported, rate-limited, by the Redis
   * watcher (adapters/redis.ts): debug here; anything else is a warning.
   */
  private reportError(err: Error, where: 'queue' | 'worker'): void {
    const connection = isConnectionError(err);
    this.log?.[connection ? 'debug' : 'warn']({ err, queue: this.name, where }, connection ? 'queue connection error' : 'queue error');
  }

  private conn(): Redis {
    const c = createRedis(this.url);
    this.track(c);
    return c;
  }

  /** Records `c` and every duplicate made of it, so close() can always drop them. */
  private track(c: Redis): void {
    this.conns.push(c);
    const duplicate = c.duplicate.bind(c);
    c.duplicate = (...args: Parameters<Redis['duplicate']>) => {
      const d = duplicate(...args);
      this.track(d);
      return d;
    };
  }

  private jobsFinished(): Promise<void> {
    return this.running === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  available(graceMs: number): Promise<boolean> {
    const c = this.conns[0];
    return c ? whenReady(c, graceMs) : Promise.resolve(false);
  }

  async add(data: T, opts: JobOptions = {}): Promise<void> {
    await this.queue.add(this.name, data, {
      ...(opts.dedupKey !== undefined ? { deduplication: { id: opts.dedupKey, keepLastIfActive: true } } : {}),
      ...(opts.delayMs ? { delay: opts.delayMs } : {}),
    });
  }

  process(handler: JobHandler<T>, opts: WorkerOptions): void {
    this.worker = new Worker(
      this.name,
      async (job: Job, _token?: string, signal?: AbortSignal) => {
        this.running++;
        try {
          await handler({
            data: job.data as T,
            id: String(job.id),
            attempt: job.attemptsMade + 1,
            signal: signal ?? new AbortController().signal,
          });
        } catch (err) {
          if (!isPermanentFailure(err)) throw err;
          this.log?.warn({ err, code: err.code, queue: this.name, job: job.id, attempt: job.attemptsMade + 1 }, 'job failed permanently; not retried');
          // BullMQ moves a job that throws this to the failed set without retrying it.
          throw new UnrecoverableError(`${err.code}: ${err.message}`);
        } finally {
          if (--this.running === 0) for (const wake of this.idleWaiters.splice(0)) wake();
        }
      },
      {
        connection: this.conn(),
        prefix: this.settings.prefix,
        concurrency: opts.concurrency,
        lockDuration: this.settings.lockDurationMs,
        stalledInterval: this.settings.stalledIntervalMs,
        // A job may stall a few times (workers killed in a row) before it is failed;
        // even then the inbox keeps the message and the recovery sweep drains it.
        maxStalledCount: 5,
        drainDelay: 5,
      },
    );
    this.worker.on('error', (err) => this.reportError(err, 'worker'));
  }

  setConcurrency(n: number): void {
    // BullMQ's fetch loop reads it before each fetch, and a finishing job fetches the next only under it.
    if (this.worker) this.worker.concurrency = Math.max(1, Math.floor(n));
  }

  async counts() {
    const c = await this.queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
    return { waiting: (c.waiting ?? 0) + (c.prioritized ?? 0), active: c.active ?? 0, delayed: c.delayed ?? 0, failed: c.failed ?? 0 };
  }

  async ping(): Promise<void> {
    await this.conns[0]!.ping();
  }

  async stopTaking(): Promise<void> {
    await this.worker?.pause(true); // true: without waiting for the running jobs
  }

  private closed?: Promise<void>;

  /**
   * Lets the running jobs finish (however long a turn takes), then gives BullMQ's teardown
   * TEARDOWN_GRACE_MS before dropping every connection: a close never hangs on a lost Redis.
   */
  close(): Promise<void> {
    this.closed ??= (async () => {
      const worker = this.worker?.close();
      await this.jobsFinished();
      // One grace for the worker and the queue together: when the worker could not close, neither will the queue.
      const closed = (async () => {
        await worker;
        await this.queue.close();
      })();
      // Redis away now: nothing to wait for (a clean close only tells Redis this worker left).
      const graceMs = this.conns[0]?.status === 'ready' ? TEARDOWN_GRACE_MS : 0;
      if (!(await settlesWithin(closed, graceMs)))
        this.log?.warn(
          { queue: this.name, graceMs, redis: this.conns[0]?.status },
          'the queue did not close after its jobs finished (Redis unreachable?); dropping its connections',
        );
      for (const c of this.conns) disconnectForGood(c);
    })();
    return this.closed;
  }
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

function isConnectionError(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return (code !== undefined && CONNECTION_CODES.has(code)) || /connection is closed|ECONNREFUSED|ECONNRESET/i.test(err?.message ?? '');
}
