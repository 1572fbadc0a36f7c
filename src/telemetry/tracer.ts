import {
  type Attributes,
  type Context,
  context,
  isSpanContextValid,
  type Link,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TimeInput,
  trace,
} from '@opentelemetry/api';

/**
 * The one tracer every span of ours comes from. Only @opentelemetry/api is imported here: until
 * src/telemetry/otlp.ts registers a provider (OTEL_EXPORTER_OTLP_*ENDPOINT set), the API's no-op
 * tracer answers and a span costs one object that records nothing.
 */
export const tracer = () => trace.getTracer('switchboard');

export { type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode };

/** Names of our own attributes (the GenAI ones are in genai.ts). */
export const ATTR = {
  channel: 'switchboard.channel',
  conversation: 'switchboard.conversation.id',
  inboxId: 'switchboard.inbox.id',
  inboxIds: 'switchboard.inbox.ids',
  turn: 'switchboard.turn.id',
  attempt: 'switchboard.turn.attempt',
  outcome: 'switchboard.ingress.outcome',
  finishReason: 'switchboard.turn.finish_reason',
  moatDecision: 'switchboard.moat.decision',
  moatTier: 'switchboard.moat.tier',
  replayed: 'switchboard.replayed',
  approvalId: 'switchboard.approval.id',
  approvalStatus: 'switchboard.approval.status',
  /** A `deliver <channel>` span's end: `delivered`, `handed_over` (to the delivery queue), `refused`, `retry`, `dead_letter`. */
  deliveryOutcome: 'switchboard.delivery.outcome',
  jobAttempt: 'messaging.message.delivery_count',
} as const;

/** W3C traceparent of a context's span (the active one by default); undefined when nothing is traced. */
export function traceparentOf(ctx: Context = context.active()): string | undefined {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1 ? 1 : 0).toString(16).padStart(2, '0')}`;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The remote parent a traceparent names (a job's, another process's); ROOT_CONTEXT when it is absent or malformed. */
export function contextOf(traceparent: string | undefined): Context {
  const m = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!m || m[1] === 'ff') return ROOT_CONTEXT;
  const sc = { traceId: m[2]!, spanId: m[3]!, traceFlags: Number.parseInt(m[4]!, 16) & 1, isRemote: true };
  return isSpanContextValid(sc) ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

/** A link to the span a traceparent names (a message folded into another's drain), or none. */
export function linkTo(traceparent: string | undefined): Link[] {
  const sc = trace.getSpanContext(contextOf(traceparent));
  return sc ? [{ context: sc }] : [];
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  startTime?: TimeInput;
  /** The parent; the active context by default. */
  parent?: Context;
}

export function startSpan(name: string, opts: SpanOptions = {}): Span {
  const { parent, ...rest } = opts;
  return tracer().startSpan(name, rest, parent ?? context.active());
}

/** Marks a span failed with the error (recorded as an exception event). */
export function failSpan(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setAttribute('error.type', (err as { code?: unknown })?.code ? String((err as { code: unknown }).code) : ((err as Error)?.name ?? 'Error'));
  span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message ?? String(err) });
}

/**
 * How the active `deliver <channel>` span ended (the delivery sink and the delivery queue say it):
 * with an error, the span is failed even though nothing was thrown through it (the reply was handed
 * over to the delivery queue, refused, dead-lettered). A no-op when nothing is traced.
 */
export function deliveryOutcome(outcome: string, err?: unknown, span: Span | undefined = trace.getActiveSpan()): void {
  if (!span) return;
  span.setAttribute(ATTR.deliveryOutcome, outcome);
  if (err !== undefined) failSpan(span, err);
}

/** Runs fn in a new span (active inside it), ending it however fn ends. */
export async function inSpan<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = startSpan(name, opts);
  try {
    return await context.with(trace.setSpan(opts.parent ?? context.active(), span), () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Runs fn with ctx active (its spans, and the jobs it enqueues, continue ctx's trace). */
export function within<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/** The context with this span as its parent, for work that starts later (not through the active context). */
export function contextWith(span: Span, parent: Context = context.active()): Context {
  return trace.setSpan(parent, span);
}

/** What a job carries of the active trace: its traceparent and when it was enqueued; nothing when nothing is traced. */
export function jobTrace(ctx: Context = context.active()): { traceparent?: string; enqueuedAt?: number } {
  const traceparent = traceparentOf(ctx);
  return traceparent ? { traceparent, enqueuedAt: Date.now() } : {};
}
