import type { DrainJob } from '../../kernel/jobs.js';
import { ATTR, type Context, contextOf, contextWith, inSpan, type Span, SpanKind, startSpan } from './tracer.js';

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

/** A turn's span, a child of the active (drain) span, and the context its model, tool and delivery spans go under. */
export function startTurnSpan(t: { conversationId: string; channel: string; turnId: string; attempt: number; inboxIds: number[] }): {
  span: Span;
  ctx: Context;
} {
  const span = startSpan('turn', {
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
