import type { Logger } from 'pino';
import type { JobQueue } from '../../adapters/queue/port.js';
import type { InboundMessage } from '../../kernel/envelope.js';
import { identityOf } from '../../kernel/identity.js';
import type { DrainJob } from '../../kernel/jobs.js';
import { ATTR, contextOf, inSpan, SpanKind } from '../telemetry/tracer.js';
import { Composer, type StepError } from './compose.js';
import type { IngressContext, IngressDeps, IngressStore } from './context.js';
import type { IngressOutcome, ReceiveOptions } from './outcome.js';
import { OutcomeRetention } from './retention.js';
import { accept } from './steps/accept.js';
import { access } from './steps/access.js';
import { approvalAnswer } from './steps/approval-answer.js';
import { command } from './steps/command.js';
import { interrupt } from './steps/interrupt.js';
import { parked } from './steps/parked.js';
import { queueAvailable } from './steps/queue-available.js';
import { rateLimit } from './steps/rate-limit.js';
import { redelivery } from './steps/redelivery.js';
import { takenOver } from './steps/taken-over.js';
import { waitingCap } from './steps/waiting-cap.js';

export { Composer, type Next, NextCalledTwiceError, type Step, StepError } from './compose.js';
export type { IngressContext, IngressDeps, IngressStep } from './context.js';
export {
  type AcceptedOutcome,
  type AnsweredOutcome,
  ConversationFullError,
  type IngressOutcome,
  type ReceiveOptions,
  type RefusalCode,
  type RefusedOutcome,
} from './outcome.js';

/** The steps in order; each hands on or answers. */
export const INGRESS_STEPS = [
  queueAvailable,
  redelivery,
  access,
  rateLimit,
  command,
  approvalAnswer,
  parked,
  waitingCap,
  takenOver,
  accept,
  interrupt,
] as const;

/**
 * The one way a message comes in, whatever its channel (chat platforms, the
 * HTTP API, MCP's send_message, webhooks): receive() runs it through the steps
 * (src/ingress/steps/) and returns what became of it. The outcome is recorded
 * against (channel, external id): a redelivered event gets the same one back.
 */
export class Ingress {
  private readonly deps: IngressDeps;
  private readonly retention?: OutcomeRetention;
  private readonly chain: Composer<InboundMessage, IngressContext, IngressOutcome>;

  /** Without `outcomes` nothing is recorded and a redelivered command or answer is handled again (the inbox still dedupes messages). */
  constructor(store: IngressStore, queue: JobQueue<DrainJob>, log: Logger, opts: Omit<IngressDeps, 'store' | 'queue' | 'log'> = {}) {
    this.deps = { ...opts, store, queue, log };
    this.retention = opts.outcomes ? new OutcomeRetention(opts.outcomes, log) : undefined;
    this.chain = new Composer<InboundMessage, IngressContext, IngressOutcome>(
      async (_msg, ctx) => {
        if (!ctx.accepted) throw new Error('no ingress step produced an outcome');
        return { kind: 'accepted', ...ctx.accepted };
      },
      (err) => this.failed(err),
    ).use(...INGRESS_STEPS);
  }

  async receive(msg: InboundMessage, opts: ReceiveOptions = {}): Promise<IngressOutcome> {
    this.retention?.maybePrune();
    // The message's span (under the client's, when its request carried a traceparent): the drain job carries it to the worker (steps/accept.ts).
    const parent = opts.traceparent ? { parent: contextOf(opts.traceparent) } : {};
    return inSpan(`message ${msg.channel}`, { kind: SpanKind.SERVER, attributes: { [ATTR.channel]: msg.channel }, ...parent }, async (span) => {
      const out = await this.chain.run(msg, { deps: this.deps, opts, sender: identityOf(msg) });
      span.setAttribute(ATTR.outcome, out.kind === 'refused' ? `refused:${out.code}` : out.kind);
      if (out.kind === 'accepted') span.setAttributes({ [ATTR.conversation]: out.conversationId, [ATTR.inboxId]: out.inboxId });
      if (out.kind === 'refused' && !out.replayed) this.deps.dropped?.(msg.channel, out.code);
      return out;
    });
  }

  /** The error boundary: logged with the step and the event, then thrown to the channel (which lets its platform deliver again). */
  private failed(err: StepError<InboundMessage>): never {
    this.deps.log.warn({ err: err.cause, step: err.step, channel: err.input.channel, externalId: err.input.externalId }, 'ingress step failed');
    throw err;
  }
}
