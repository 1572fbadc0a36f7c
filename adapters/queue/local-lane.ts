import { ignoreError } from '../../kernel/errors.js';
import type { MemoryQueue } from './memory.js';
import type { JobHandler, JobOptions, JobQueue, LocalSlot, WorkerOptions } from './port.js';

/**
 * The drain queue of a process that runs both roles on Redis (`switchboard start`): a job added
 * here while this process's worker has a free slot runs here, in process (the local lane),
 * without BullMQ's scripts; a delayed job, or one added while the worker is full or not
 * running, goes to the shared queue for any worker. This process consumes both.
 *
 * Nothing durable moves: the message is in the inbox before any job exists, and the drain job
 * carries no message. The conversation's lease (in Postgres) still lets one drain at a time open
 * turns, whichever lane or process it runs in. A local job lost with its process (SIGKILL) is
 * found by every worker's recovery sweep (inbox rows older than `queue.recoverAfterMs`), as a
 * shared job is found after `queue.lockDurationMs`; on a clean close, jobs still waiting here
 * are handed to the shared queue first.
 *
 * A job is admitted here only while fewer than `concurrency` run in this process; the shared
 * worker keeps its own `concurrency`, so while both lanes are busy at once (jobs from other
 * ingresses arriving as this one's run) the process may briefly run more than that.
 */
export class LocalLaneQueue<T> implements JobQueue<T> {
  private concurrency = 0;
  /** Jobs of either lane running in this process. */
  private running = 0;
  /** Local slots held by reserveLocal() for jobs about to start here. */
  private reserved = 0;
  private closing = false;

  constructor(
    private readonly shared: JobQueue<T>,
    private readonly local: MemoryQueue<T>,
  ) {}

  async add(data: T, opts: JobOptions = {}): Promise<void> {
    if (!this.closing && !opts.delayMs && this.running + this.local.waitingCount() + this.reserved < this.concurrency) return this.local.add(data, opts);
    return this.shared.add(data, opts);
  }

  /** A slot in the local lane, under the same admission rule as add() (port.ts). */
  reserveLocal(): LocalSlot<T> | undefined {
    if (this.closing || this.running + this.local.waitingCount() + this.reserved >= this.concurrency) return undefined;
    const slot = this.local.reserveLocal();
    if (!slot) return undefined;
    this.reserved++;
    let used = false;
    const free = () => {
      if (!used) this.reserved--;
      used = true;
    };
    return {
      run: (data, local) => {
        free();
        return slot.run(data, local);
      },
      release: () => {
        free();
        slot.release();
      },
    };
  }

  process(handler: JobHandler<T>, opts: WorkerOptions): void {
    this.concurrency = opts.concurrency;
    const counted: JobHandler<T> = async (job) => {
      this.running++;
      try {
        await handler(job);
      } finally {
        this.running--;
      }
    };
    this.local.process(counted, opts);
    this.shared.process(counted, opts);
  }

  async counts() {
    const [a, b] = await Promise.all([this.shared.counts(), this.local.counts()]);
    return { waiting: a.waiting + b.waiting, active: a.active + b.active, delayed: a.delayed + b.delayed, failed: a.failed + b.failed };
  }

  ping(): Promise<void> {
    return this.shared.ping();
  }

  private closed?: Promise<void>;

  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing = true;
      // Taken at once (a drain finishing now would start the next one here), then handed over once
      // this process takes no more shared jobs, or it would take back what it hands over.
      const waiting = this.local.takeWaiting();
      await this.shared.stopTaking?.().catch(ignoreError('close() stops it anyway'));
      // What waits here would otherwise wait for a recovery sweep: another worker takes it now.
      // A hand-over that fails (Redis down) leaves the job to the recovery sweep.
      for (const job of waiting)
        await this.shared.add(job.data, job.dedupKey !== undefined ? { dedupKey: job.dedupKey } : {}).catch(ignoreError('the recovery sweep finds it'));
      await this.local.close();
      await this.shared.close();
    })();
    return this.closed;
  }
}
