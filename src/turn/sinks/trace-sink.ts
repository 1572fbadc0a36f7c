import { ATTR, type Context, inSpan, type Span, SpanKind } from '../../telemetry/tracer.js';
import type { TurnSink } from '../ports.js';

/**
 * The turn's span sees its sink: the finish reason and tokens when it is `done`, and its flush
 * (the channel's final delivery: the last edit, the reply posted, the HTTP answer's last events)
 * becomes the `deliver <channel>` span. With tracing off both are no-ops.
 */
export function traceSink(sink: TurnSink, turnSpan: Span, turnCtx: Context, channel: string): TurnSink {
  return {
    push: (e) => {
      if (e.type === 'done') {
        turnSpan.setAttributes({
          [ATTR.finishReason]: e.finishReason,
          'gen_ai.usage.input_tokens': e.usage.input,
          'gen_ai.usage.output_tokens': e.usage.output,
          // How many calls wait for an operator (their codes are not traced: a code approves the call).
          ...(e.approvals?.length ? { 'switchboard.approvals.pending': e.approvals.length } : {}),
        });
      }
      sink.push(e);
    },
    ...(sink.attempt ? { attempt: (a) => sink.attempt!(a) } : {}),
    flush: () =>
      inSpan(`deliver ${channel}`, { kind: SpanKind.PRODUCER, parent: turnCtx, attributes: { [ATTR.channel]: channel } }, async () => {
        await sink.flush?.();
      }),
  };
}
