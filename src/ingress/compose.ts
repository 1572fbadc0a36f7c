/**
 * A chain of steps `(message, ctx, next)`, in the style of grammY's Composer:
 * each step either answers (returns an outcome) or hands on with `await next()`,
 * and may act after the later steps ran. One error boundary: whatever a step
 * throws reaches the boundary once, wrapped in a StepError that names the step.
 */
export type Next<R> = () => Promise<R>;

export interface Step<M, C, R> {
  /** Named in errors and logs. */
  readonly name: string;
  /** May throw; must call next() at most once. */
  run(message: M, ctx: C, next: Next<R>): Promise<R>;
}

/** A step failed: the step's name, the message it was handling, and the original error as `cause`. */
export class StepError<M = unknown> extends Error {
  constructor(
    readonly step: string,
    readonly input: M,
    readonly cause: unknown,
  ) {
    super(`ingress step "${step}" failed: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'StepError';
  }
}

/** A step called next() a second time: a programming error, not a platform failure. */
export class NextCalledTwiceError extends Error {
  constructor(readonly step: string) {
    super(`ingress step "${step}" called next() more than once`);
    this.name = 'NextCalledTwiceError';
  }
}

export class Composer<M, C, R> {
  private readonly steps: Step<M, C, R>[] = [];

  /**
   * `end` answers when every step handed on; `onError` is the boundary: it gets
   * every failure once and returns an outcome or throws (the default rethrows).
   */
  constructor(
    private readonly end: (message: M, ctx: C) => Promise<R>,
    private readonly onError: (err: StepError<M>) => R | Promise<R> = (err) => {
      throw err;
    },
  ) {}

  use(...steps: Step<M, C, R>[]): this {
    this.steps.push(...steps);
    return this;
  }

  get names(): string[] {
    return this.steps.map((s) => s.name);
  }

  async run(message: M, ctx: C): Promise<R> {
    try {
      return await this.at(0, message, ctx);
    } catch (err) {
      return await this.onError(err instanceof StepError ? (err as StepError<M>) : new StepError('end', message, err));
    }
  }

  private async at(i: number, message: M, ctx: C): Promise<R> {
    const step = this.steps[i];
    if (!step) return this.end(message, ctx);
    let called = false;
    const next: Next<R> = () => {
      if (called) return Promise.reject(new NextCalledTwiceError(step.name));
      called = true;
      return this.at(i + 1, message, ctx);
    };
    try {
      return await step.run(message, ctx, next);
    } catch (err) {
      // A later step's failure passes through this one unwrapped: it is named once, where it happened.
      if (err instanceof StepError) throw err;
      throw new StepError(step.name, message, err);
    }
  }
}
