import type { Logger } from 'pino';
import type { JobQueue } from '../adapters/queue/port.js';
import type { AcceptResult, Store } from '../adapters/store/store.js';
import type { InboundMessage } from './envelope.js';
import type { DrainJob } from './worker.js';

/**
 * The ingress side of every channel: write the message to the durable inbox
 * (a redelivered event is a no-op), then enqueue a drain for its conversation.
 * Once accept() resolves the message is durable, whatever happens to the queue:
 * if the enqueue fails, the workers' recovery sweep drains the inbox later.
 */
export class Ingress {
  constructor(
    private readonly store: Store,
    private readonly queue: JobQueue<DrainJob>,
    private readonly log: Logger,
    private readonly enqueueTimeoutMs = 3_000,
  ) {}

  async accept(msg: InboundMessage, agent = 'default'): Promise<AcceptResult> {
    const res = await this.record(msg, agent);
    await this.dispatch(res);
    return res;
  }

  /** Step one of accept(): the durable write. */
  record(msg: InboundMessage, agent = 'default'): Promise<AcceptResult> {
    return this.store.accept(msg, agent);
  }

  /** Step two: wake a worker for the conversation (nothing to do for a duplicate). */
  async dispatch(res: AcceptResult): Promise<void> {
    if (!res.duplicate) await this.enqueue(res.conversationId);
  }

  private async enqueue(conversationId: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.queue.add({ conversationId }, { dedupKey: conversationId }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('enqueue timed out')), this.enqueueTimeoutMs);
        }),
      ]);
    } catch (err) {
      this.log.warn({ err, conversation: conversationId }, 'enqueue failed; the recovery sweep will drain this conversation');
    } finally {
      clearTimeout(timer);
    }
  }
}
