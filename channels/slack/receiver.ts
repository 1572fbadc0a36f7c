import type { App, Receiver } from '@slack/bolt';

/** Set by the event handlers through bolt's context: the event could not be made durable. */
export interface EventOutcome {
  failed?: unknown;
}

type AckFn = (response?: unknown) => Promise<void>;

/**
 * bolt's receiver for both transports. bolt acknowledges an Events API event
 * before its listeners run; we acknowledge it only once the message is in the
 * inbox (or ignored), so a crash in between makes Slack deliver it again
 * rather than lose it. Interactivity (buttons) keeps bolt's own ack.
 */
export class RelayReceiver implements Receiver {
  private app?: App;

  init(app: App): void {
    this.app = app;
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  get ready(): boolean {
    return !!this.app;
  }

  /** An event_callback body. Resolves true when it was handled (acknowledge it), false when it failed (let Slack redeliver). */
  async event(body: Record<string, unknown>, retryNum?: number, retryReason?: string): Promise<boolean> {
    if (!this.app) return false;
    const outcome: EventOutcome = {};
    try {
      await this.app.processEvent({
        body,
        ack: async () => {},
        ...(retryNum !== undefined ? { retryNum } : {}),
        ...(retryReason ? { retryReason } : {}),
        customProperties: { sbOutcome: outcome },
      });
    } catch (err) {
      outcome.failed ??= err;
    }
    return !outcome.failed;
  }

  /** Interactivity and anything else: the listener calls ack(). */
  async interactive(body: Record<string, unknown>, ack: AckFn, retryNum?: number, retryReason?: string): Promise<void> {
    if (!this.app) return;
    await this.app.processEvent({ body, ack, ...(retryNum !== undefined ? { retryNum } : {}), ...(retryReason ? { retryReason } : {}) });
  }
}
