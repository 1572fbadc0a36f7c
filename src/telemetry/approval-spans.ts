import { trace } from '@opentelemetry/api';
import { GEN_AI } from './genai.js';
import { ATTR, contextOf, contextWith, linkTo, type Span, startSpan } from './tracer.js';

/** What the wait span needs of an approval row (adapters/store/ports/approvals.ts ApprovalRecord). */
export interface WaitedApproval {
  id: string;
  tool: string;
  toolCallId: string;
  status: string;
  createdAt: Date;
  decidedAt: Date | null;
  decidedVia?: string | null;
  /** The parked turn's span (kept on the row, migration 029). */
  traceparent?: string;
}

/**
 * The `approval wait <tool>` span, recorded once, where the approval is decided (the process the
 * answer came to, or the one whose deadline job or sweep expired it): a child of the turn that parked,
 * in the trace of the message that asked, from the request to the decision, linked to the answer's
 * span (`approval answer`, in its own trace) when there is one. The wait outlives any one process, so
 * it is not a span kept open across it. Without the parked turn's traceparent (traces were off when it
 * parked) it goes under the answer, or is not recorded.
 */
export function recordApprovalWait(a: WaitedApproval, opts: { answer?: Span; superseded?: boolean } = {}): void {
  const parent = a.traceparent ? contextOf(a.traceparent) : opts.answer ? contextWith(opts.answer) : undefined;
  if (!parent || !trace.getSpanContext(parent)) return;
  const answered = opts.answer?.spanContext();
  const links = answered && answered.traceId !== trace.getSpanContext(parent)!.traceId ? [{ context: answered }] : [];
  startSpan(`approval wait ${a.tool}`, {
    parent,
    startTime: a.createdAt,
    ...(links.length ? { links } : {}),
    attributes: {
      [ATTR.approvalId]: a.id,
      [ATTR.approvalStatus]: a.status,
      [GEN_AI.toolName]: a.tool,
      [GEN_AI.toolCallId]: a.toolCallId,
      ...(a.decidedVia ? { 'switchboard.approval.decided_via': a.decidedVia } : {}),
      ...(opts.superseded ? { 'switchboard.approval.superseded': true } : {}),
    },
  }).end(a.decidedAt ?? new Date());
}

/** The answer's span links the turn that parked on the approval (the other direction of the wait's link). */
export function linkAnswerToParked(answer: Span, a: { traceparent?: string }): void {
  for (const l of linkTo(a.traceparent)) answer.addLink(l);
}
