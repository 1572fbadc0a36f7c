import type { LogSink } from '../../kernel/log.js';
import type { JobHandler, JobOptions, JobQueue, LocalSlot, QueueSettings, WorkerOptions } from './port.js';
import { isPermanentFailure } from './retry-policy.js';

interface MemJob<T> {
  id: string;
  data: T;
  attempt: number;
  dedupKey?: string;
  /** A reserved slot's in-process hand-over (JobContext.local): first attempt only. */
  local?: unknown;
}

/**
 * The embedded queue: same semantics as the BullMQ adapter (dedup with
 * keep-last-if-active, retries with backoff, delays), in process. It keeps
 * nothing across restarts; the worker's recovery sweep re-drains the inbox.
 */
export class MemoryQueue<T> implements JobQueue<T> {
  private waiting: MemJob<T>[] = [];
  private active = new Set<MemJob<T>>();
  private activeKeys = new Set<string>();
  /** dedupKey → job waiting to run once the active one finishes. */
  private nextForKey = new Map<string, MemJob<T>>();
  private timers = new Set<NodeJS.Timeout>();
  private handler?: JobHandler<T>;
  private concurrency = 1;
  private closing = false;
  private failed = 0;
  /** Slots held by reserveLocal() for jobs about to start. */
  private reserved = 0;
  private seq = 0;
  private idle: Array<() => void> = [];
  private readonly abort = new AbortController();

  constructor(
    private readonly settings: QueueSettings,
    /** Where a permanent job failure is reported (the gateway's logger; app/infra.ts). */
    private readonly log?: LogSink,
    private readonly name = 'memory',
  ) {}

  async add(data: T, opts: JobOptions = {}): Promise<void> {
    if (this.closing) throw new Error('queue is closed');
    const job: MemJob<T> = { id: String(++this.seq), data, attempt: 1, dedupKey: opts.dedupKey };
    if (opts.delayMs && opts.delayMs > 0) {
      this.later(opts.delayMs, () => this.enqueue(job));
      return;
    }
    this.enqueue(job);
  }

  private enqueue(job: MemJob<T>): void {
    const key = job.dedupKey;
    if (key !== undefined) {
      if (this.activeKeys.has(key)) {
        this.nextForKey.set(key, job); // keep the latest only
        return;
      }
      if (this.waiting.some((j) => j.dedupKey === key)) return;
    }
    this.waiting.push(job);
    this.pump();
  }

  process(handler: JobHandler<T>, opts: WorkerOptions): void {
    this.handler = handler;
    const cap = this.settings.globalConcurrency;
    this.concurrency = Math.max(1, cap ? Math.min(cap, opts.concurrency) : opts.concurrency);
    this.pump();
  }

  private pump(): void {
    if (!this.handler || this.closing) return;
    while (this.active.size + this.reserved < this.concurrency) {
      const idx = this.waiting.findIndex((j) => j.dedupKey === undefined || !this.activeKeys.has(j.dedupKey));
      if (idx < 0) return;
      const [job] = this.waiting.splice(idx, 1);
      this.run(job!);
    }
  }

  private run(job: MemJob<T>): void {
    this.active.add(job);
    if (job.dedupKey !== undefined) this.activeKeys.add(job.dedupKey);
    const handler = this.handler!;
    void (async () => {
      let retry = false;
      try {
        await handler({
          data: job.data,
          id: job.id,
          attempt: job.attempt,
          signal: this.abort.signal,
          ...(job.local !== undefined ? { local: job.local } : {}),
        });
      } catch (err) {
        if (isPermanentFailure(err)) {
          this.log?.warn({ err, code: err.code, queue: this.name, job: job.id, attempt: job.attempt }, 'job failed permanently; not retried');
          this.failed++;
        } else if (job.attempt < this.settings.attempts && !this.closing) retry = true;
        else this.failed++;
      }
      this.active.delete(job);
      if (job.dedupKey !== undefined) {
        this.activeKeys.delete(job.dedupKey);
        const next = this.nextForKey.get(job.dedupKey);
        this.nextForKey.delete(job.dedupKey);
        if (retry) {
          const again = { ...job, attempt: job.attempt + 1, local: undefined };
          const delay = this.settings.backoffMs * 2 ** (job.attempt - 1);
          // The retry stands in for any newer job with the same key (it reads the same inbox).
          this.later(delay, () => this.enqueue(again));
        } else if (next) this.enqueue(next);
      } else if (retry) {
        this.later(this.settings.backoffMs * 2 ** (job.attempt - 1), () => this.enqueue({ ...job, attempt: job.attempt + 1, local: undefined }));
      }
      this.pump();
      if (this.active.size === 0) for (const f of this.idle.splice(0)) f();
    })();
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.closing) fn();
    }, ms);
    this.timers.add(t);
  }

  async counts() {
    return { waiting: this.waiting.length + this.nextForKey.size, active: this.active.size, delayed: this.timers.size, failed: this.failed };
  }

  /** A free slot held for a job that then starts at once, skipping the waiting list (port.ts). */
  reserveLocal(): LocalSlot<T> | undefined {
    if (!this.handler || this.closing || this.active.size + this.waiting.length + this.reserved >= this.concurrency) return undefined;
    this.reserved++;
    let used = false;
    const free = () => {
      if (used) return false;
      used = true;
      this.reserved--;
      return true;
    };
    return {
      run: (data, local) => {
        if (!free()) throw new Error('a reserved slot runs one job');
        if (this.closing) return false;
        this.run({ id: String(++this.seq), data, attempt: 1, local });
        return true;
      },
      release: () => {
        if (free()) this.pump();
      },
    };
  }

  /** Jobs waiting to run (not those waiting behind a running job of their key, nor delayed ones). */
  waitingCount(): number {
    return this.waiting.length;
  }

  /** Removes and returns every job not yet running (the local lane hands them over when it closes: local-lane.ts). */
  takeWaiting(): { data: T; dedupKey?: string }[] {
    const jobs = [...this.waiting, ...this.nextForKey.values()];
    this.waiting = [];
    this.nextForKey.clear();
    return jobs.map((j) => ({ data: j.data, ...(j.dedupKey !== undefined ? { dedupKey: j.dedupKey } : {}) }));
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.closing = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (this.active.size > 0) await new Promise<void>((r) => this.idle.push(r));
  }
}
