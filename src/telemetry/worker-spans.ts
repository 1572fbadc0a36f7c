import { context, trace } from '@opentelemetry/api';
import type { DrainJob } from '../../kernel/jobs.js';
import { ATTR, type Context, contextOf, contextWith, inSpan, linkTo, type Span, SpanKind, startSpan } from './tracer.js';

/**
 * A drain job's spans in the trace it carries (the message's, from the ingress process): its wait
 * in the queue (from the enqueue to now), then the drain itself, active while fn runs.
 */
export function drainSpans<T>(job: { data: DrainJob; attempt: number }, fn: () => Promise<T>): Promise<T> {
  const parent = contextOf(job.data.traceparent);
  const attributes = { [ATTR.conversation]: job.data.conversationId, ...(job.data.deferred ? { 'switchboard.drain.deferred': true } : {}) };
  if (job.data.enqueuedAt) startSpan('queue wait', { parent, startTime: job.data.enqueuedAt, attributes }).end();
  return inSpan('drain', { kind: SpanKind.CONSUMER, parent, attributes: { ...attributes, [ATTR.jobAttempt]: job.attempt } }, fn);
}

/**
 * A turn's span, a child of the active (drain) span, and the context its model, tool and delivery spans go under.
 * It links the span of every message it answers that is not already its ancestor (a message whose enqueue
 * was folded into another's drain), so each message's trace reaches the turn that answered it.
 */
export function startTurnSpan(t: {
  conversationId: string;
  channel: string;
  turnId: string;
  attempt: number;
  inboxIds: number[];
  traceparents?: Array<string | undefined>;
}): {
  span: Span;
  ctx: Context;
} {
  const parentTrace = trace.getSpanContext(context.active())?.traceId;
  const links = (t.traceparents ?? []).flatMap((tp) => linkTo(tp)).filter((l) => l.context.traceId !== parentTrace);
  const span = startSpan('turn', {
    ...(links.length ? { links } : {}),
    attributes: {
      [ATTR.conversation]: t.conversationId,
      [ATTR.channel]: t.channel,
      [ATTR.turn]: t.turnId,
      [ATTR.attempt]: t.attempt,
      [ATTR.inboxIds]: t.inboxIds,
    },
  });
  return { span, ctx: contextWith(span) };
}
