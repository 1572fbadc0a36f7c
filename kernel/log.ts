/**
 * Where a part that is not the composition root reports what it could not do (adapters,
 * the lifecycle runner). A pino logger fits; app/ passes one in.
 */
export interface LogSink {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** A catch handler that logs a failure at `level` with `msg` and context, and goes on. */
export function logFailure(log: LogSink | undefined, level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields: object = {}): (err: unknown) => void {
  return (err) => log?.[level]({ ...fields, err }, msg);
}
