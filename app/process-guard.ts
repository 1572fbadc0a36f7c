import type { Logger } from 'pino';

export interface ProcessGuardOptions {
  /** Closes the gateway (stops taking work, lets running turns finish) before the exit that follows an uncaught exception. */
  shutdown?: () => Promise<void>;
  /** Longest that shutdown may take before the process exits anyway. */
  shutdownTimeoutMs?: number;
  /** For tests; process.exit by default. */
  exit?: (code: number) => void;
}

/** Exit code after an uncaught exception: non-zero, so a supervisor (systemd, Docker, Kubernetes) restarts the process. */
export const UNCAUGHT_EXIT_CODE = 1;

/**
 * The last resorts of a gateway process (start, ingress, worker), for errors
 * nothing else caught, so nothing dies silently:
 *
 * - An unhandled promise rejection is logged and the process keeps serving.
 *   It is a floating promise that failed (a background write, a notification):
 *   the stack it came from has already unwound normally.
 * - An uncaught exception is logged (fatal), the gateway is closed within the
 *   deadline, and the process exits with UNCAUGHT_EXIT_CODE for its supervisor
 *   to restart it. An exception thrown through an arbitrary stack may have left
 *   in-memory state half-updated (a map, a lease, a counter), which is not safe
 *   to keep serving from; durable state is in the store and the queue, so the
 *   restarted process picks up every turn. Requests cannot get here: the HTTP
 *   server (src/http/server.ts) answers every error of request parsing and
 *   handling itself; only a bug in a timer or an event listener can.
 *
 * Returns a function that removes the handlers.
 */
export function installProcessGuard(log: Logger, opts: ProcessGuardOptions = {}): () => void {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  let dying = false;

  const onRejection = (reason: unknown) => {
    log.error({ err: reason }, 'unhandled promise rejection; the process keeps serving');
  };

  const onException = (err: Error, origin: string) => {
    if (dying) {
      log.fatal({ err, origin }, 'another uncaught exception while shutting down; exiting now');
      exit(UNCAUGHT_EXIT_CODE);
      return;
    }
    dying = true;
    log.fatal({ err, origin }, `uncaught exception; closing the gateway and exiting with code ${UNCAUGHT_EXIT_CODE} for the supervisor to restart it`);
    // Not unref'd: the exit happens even if the shutdown never settles.
    const deadline = setTimeout(() => {
      log.error({ timeoutMs: opts.shutdownTimeoutMs ?? 10_000 }, 'shutdown after an uncaught exception took too long; exiting');
      exit(UNCAUGHT_EXIT_CODE);
    }, opts.shutdownTimeoutMs ?? 10_000);
    void Promise.resolve()
      .then(() => opts.shutdown?.())
      .catch((e: unknown) => log.error({ err: e }, 'shutdown after an uncaught exception failed'))
      .finally(() => {
        clearTimeout(deadline);
        exit(UNCAUGHT_EXIT_CODE);
      });
  };

  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return () => {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  };
}
