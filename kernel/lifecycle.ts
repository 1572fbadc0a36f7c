/** How a long-lived part is doing, for /readyz and the logs. */
export interface Health {
  ok: boolean;
  message?: string;
}

/**
 * Every long-lived part of a process (a server, a worker, a connection pool, a channel listener).
 * - start(): resolves once the part works; throws when it cannot (nothing of it is left running).
 * - close(): stops it and releases what it holds; may be called once the part has started.
 *   It should not throw for a part already gone; when it does, the runner logs it and goes on.
 * - health(): must not throw; cheap (no I/O).
 * app/lifecycle.ts runs them: start in order, close in reverse.
 */
export interface Service {
  start(): Promise<void>;
  close(): Promise<void>;
  health?(): Health;
}
