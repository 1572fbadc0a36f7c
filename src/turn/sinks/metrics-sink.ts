import type { Metrics } from '../../metrics.js';
import type { TurnSink } from '../ports.js';

/**
 * The metrics sink: time to the first token, finished turns by reason, turn
 * seconds (a parked turn is not timed), fallbacks, approvals requested, and
 * every provider attempt by slot and outcome.
 */
export function metricsSink(m: Metrics, channel: string): TurnSink {
  let started: number | undefined;
  let firstText = true;
  const seconds = () => (performance.now() - (started ?? performance.now())) / 1000;
  return {
    push: (e) => {
      if (e.type === 'turn_start') started ??= performance.now();
      else if (e.type === 'text_delta' && firstText) {
        firstText = false;
        m.firstTokenSeconds.observe({ channel }, seconds());
      } else if (e.type === 'done') {
        m.turns.inc({ channel, finish_reason: e.finishReason });
        if (e.finishReason !== 'approval_pending') m.turnSeconds.observe({ channel }, seconds());
        if (e.provider?.fallbackActivated && e.provider.slot) m.fallbacks.inc({ slot: e.provider.slot });
      } else if (e.type === 'approval_requested') m.approvalsRequested.inc({ tier: e.approval.tier });
    },
    attempt: (a) => m.providerAttempts.inc({ slot: a.slot, outcome: a.error }),
  };
}
