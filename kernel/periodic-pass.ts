/**
 * A pass that runs every `intervalMs` and on demand, never two at once: a call while one runs
 * gets the running one. A failed pass is reported to `onError` and the next tick runs again, so
 * `run` never rejects. `stop` clears the timer and waits for a pass in flight. The timer does
 * not hold the process.
 */
export class PeriodicPass {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.run(), this.intervalMs);
    this.timer.unref();
    void this.run();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  run(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.pass()
      .catch((err: unknown) => {
        this.onError(err);
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
