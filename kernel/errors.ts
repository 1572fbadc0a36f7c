/**
 * The one base of the errors the gateway throws on purpose. Each carries:
 * - `code`: a stable snake_case string (logs, API answers and tests match on it; never reworded);
 * - `retryable`: true when the same call may succeed later (a server restarting, a full
 *   conversation draining), false when retrying repeats the failure (bad configuration, a refusal),
 *   as BullMQ's UnrecoverableError marks a job that must not be retried;
 * - `cause`: the error it wraps, when there is one.
 * Transport status codes (HTTP) are not here: the HTTP layer maps `code` to a status in one table
 * (src/http/errors.ts).
 */
export abstract class SwitchboardError extends Error {
  abstract readonly code: string;
  readonly retryable: boolean = false;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }
}

/** True for a SwitchboardError that says trying again may succeed; false for anything else (unknown errors are not assumed transient). */
export function isRetryable(err: unknown): boolean {
  return err instanceof SwitchboardError && err.retryable;
}

/** The stable code of a SwitchboardError, else undefined. */
export function errorCode(err: unknown): string | undefined {
  return err instanceof SwitchboardError ? err.code : undefined;
}

/**
 * Marks a deliberately ignored failure. Use it instead of an empty catch, with the reason
 * ignoring is right (best-effort cleanup, an outcome reported elsewhere):
 * `await tmp.remove().catch(ignoreError('best-effort cleanup of a temp file'))`.
 * The tree is checked for empty catches (test/no-empty-catch.test.ts).
 */
export function ignoreError(reason: string): (err: unknown) => void {
  void reason;
  return () => {};
}
