/**
 * The job queue port. One job kind matters to the core: "drain conversation X".
 * Jobs carry no message; the worker reads the inbox. Deduplication by key gives
 * per-conversation serialization: at most one active and one waiting job per key.
 */
export interface JobOptions {
  /** At most one active and one waiting job per dedupKey; a newer add while active runs after it. */
  dedupKey?: string;
  delayMs?: number;
}

export interface JobContext<T> {
  data: T;
  id: string;
  /** 1 for the first run, 2 for the first retry... */
  attempt: number;
  /** Aborted when the queue is force-closed. */
  signal: AbortSignal;
  /** What a reserved slot's run() handed its handler in process (first attempt only; never stored, never on Redis). */
  local?: unknown;
}

/**
 * A slot of this process's worker held for a job about to be added (reserveLocal()): the job then
 * starts at once, in process. Call run() or release() once.
 */
export interface LocalSlot<T> {
  /** Starts the job now in this process; false when the queue closed meanwhile (nothing ran; add it as usual). */
  run(data: T, local: unknown): boolean;
  /** Gives the slot back unused. */
  release(): void;
}

export type JobHandler<T> = (job: JobContext<T>) => Promise<void>;

export interface WorkerOptions {
  concurrency: number;
}

export interface JobQueue<T> {
  add(data: T, opts?: JobOptions): Promise<void>;
  /**
   * Whether a job can be added now: false when the queue's Redis connection is not ready within
   * `graceMs` (a reconnect after a dropped connection takes a moment; an outage does not end in
   * it), so that an add would wait for the reconnect. Absent: always available (the in-process queue).
   */
  available?(graceMs: number): Promise<boolean>;
  /**
   * Starts consuming. The handler throwing means retry with backoff, up to the configured attempts,
   * unless the error is permanent (a SwitchboardError with retryable false, retry-policy.ts): that
   * job is logged once with its code and counted failed at once.
   */
  process(handler: JobHandler<T>, opts: WorkerOptions): void;
  counts(): Promise<{ waiting: number; active: number; delayed: number; failed: number }>;
  ping(): Promise<void>;
  /**
   * Changes how many jobs this process's worker holds at once (after process(); at least 1). Absent:
   * fixed at process()'s concurrency. A job that carries several (coalescing.ts) lowers it while it runs.
   */
  setConcurrency?(n: number): void;
  /**
   * A slot of this process's own worker, held until run() or release(), when one is free now and the
   * queue runs jobs in this process (the in-process queue, the local lane); otherwise undefined.
   * Absent: this queue never runs a job in the process that adds it.
   */
  reserveLocal?(): LocalSlot<T> | undefined;
  /** Stops this process taking new jobs, at once; running ones go on and other processes still take jobs. Absent: close() alone does it. */
  stopTaking?(): Promise<void>;
  /** Stops taking jobs and waits for running ones to finish. */
  close(): Promise<void>;
}

export interface QueueSettings {
  attempts: number;
  backoffMs: number;
  /** Jobs running at once across every worker process (0 or unset: no cap). */
  globalConcurrency?: number;
}
